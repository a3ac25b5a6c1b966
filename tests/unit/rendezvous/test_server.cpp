// The real store over loopback TCP: Asio server, clients in threads, raw sockets for abuse.
// Every wait is bounded; nothing asserts on elapsed time.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <future>
#include <set>
#include <thread>

#include "lib/core/error.hpp"
#include "lib/rendezvous/client.hpp"
#include "lib/rendezvous/heartbeat.hpp"
#include "lib/rendezvous/server.hpp"

using namespace mtrain::rendezvous;
using Catch::Contains;
using std::chrono::milliseconds;

namespace {
const std::string kToken = "test-token-0123456789abcdef";

ServerOptions server_options(int min, int max, std::vector<std::string> hosts = {}) {
  ServerOptions o;
  o.listen = {"127.0.0.1", 0};
  o.store.min_nodes = min;
  o.store.max_nodes = max;
  o.store.expected_hosts = std::move(hosts);
  o.store.token = kToken;
  o.store.join_timeout = milliseconds(20000);
  o.store.last_call = milliseconds(300);
  o.store.heartbeat_timeout = milliseconds(3000);
  o.store.run_id = "loopback";
  o.frame_timeout = milliseconds(500);
  o.auth_timeout = milliseconds(500);
  o.tick_interval = milliseconds(20);
  return o;
}

ClientOptions client_options(const Server& s, const std::string& host, int slots) {
  ClientOptions o;
  o.server = {"127.0.0.1", s.port()};
  o.token = kToken;
  o.host = host;
  o.slots = slots;
  o.join_timeout = milliseconds(15000);
  o.op_timeout = milliseconds(3000);
  o.poll_interval = milliseconds(20);
  return o;
}

// The result of a future within a bound, failing the test instead of hanging.
template <class T>
T get_within(std::future<T>& f, milliseconds bound = milliseconds(20000)) {
  REQUIRE(f.wait_for(bound) == std::future_status::ready);
  return f.get();
}

// Two clients join at once (a 2-node job forms only when both have).
void join_both(Client& a, Client& b) {
  auto jb = std::async(std::launch::async, [&] { return b.join(); });
  a.join();
  get_within(jb);
}

// A plain socket for sending what no client would.
struct Raw {
  int fd = -1;
  // `from`: the local address to connect from (a 127.x address stands for another machine).
  explicit Raw(uint16_t port, const char* ip = "127.0.0.1", const char* from = nullptr) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (from) {
      sockaddr_in l{};
      l.sin_family = AF_INET;
      ::inet_pton(AF_INET, from, &l.sin_addr);
      if (::bind(fd, reinterpret_cast<sockaddr*>(&l), sizeof l) != 0) {
        ::close(fd);
        fd = -1;
        return;
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    ::inet_pton(AF_INET, ip, &a.sin_addr);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  ~Raw() {
    if (fd >= 0) ::close(fd);
  }
  Raw(Raw&& o) noexcept : fd(o.fd) { o.fd = -1; }
  // Without waiting: has the server closed this connection (EOF or reset)?
  bool closed_now() const {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0) return false;
    char c;
    return ::recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) <= 0;
  }
  void send(const std::string& bytes) { (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL); }
  // Everything the server sends until it closes the connection; `closed` is false if the
  // bound passed first.
  std::string read_until_closed(bool& closed, milliseconds bound = milliseconds(10000)) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + bound;
    closed = false;
    for (;;) {
      auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return out;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) {
        closed = true;
        return out;
      }
      out.append(buf, static_cast<size_t>(n));
    }
  }
};

std::string error_in(const std::string& reply_frame) {
  if (reply_frame.size() <= kFrameHeaderBytes) return "";
  return decode_payload(reply_frame.substr(kFrameHeaderBytes)).value("error", std::string());
}
}  // namespace

TEST_CASE("loopback: three nodes join and agree", "[rendezvous][server]") {
  std::mutex mu;
  std::vector<std::string> lines;
  auto o = server_options(3, 3, {"worker-0", "worker-1", "worker-2"});
  o.on_progress = [&](const std::string& l) {
    std::lock_guard<std::mutex> lock(mu);
    lines.push_back(l);
  };
  Server server(o);
  server.start();
  REQUIRE(server.port() != 0);

  std::vector<std::future<JoinResult>> joins;
  const std::vector<std::pair<std::string, int>> nodes{{"worker-2", 1}, {"worker-0", 4}, {"worker-1", 2}};
  for (const auto& [host, slots] : nodes)
    joins.push_back(std::async(std::launch::async, [&, host = host, slots = slots] {
      Client c(client_options(server, host, slots));
      return c.join();
    }));
  std::set<int> ranks;
  for (auto& j : joins) {
    JoinResult r = get_within(j);
    ranks.insert(r.node_rank);
    CHECK(r.assignment.world_size == 7);
    CHECK(r.assignment.master_addr == "worker-0");
    CHECK(r.assignment.nnodes == 3);
    CHECK(r.self().first_rank == std::vector<int>{0, 4, 6}[static_cast<size_t>(r.node_rank)]);
    CHECK(r.self().host == nodes[&j - &joins[0]].first);
  }
  CHECK(ranks == std::set<int>{0, 1, 2});
  CHECK(server.status().phase == Phase::running);
  std::lock_guard<std::mutex> lock(mu);
  REQUIRE(!lines.empty());
  CHECK(lines.front() == "0/3 nodes joined; waiting for: worker-0, worker-1, worker-2");
  CHECK(lines.back() == "job formed: 3 nodes, 7 ranks, master worker-0:29500");
}

TEST_CASE("loopback: MIN:MAX forms after the last call, a late node is refused", "[rendezvous][server]") {
  Server server(server_options(2, 4));
  server.start();
  auto a = std::async(std::launch::async, [&] { return Client(client_options(server, "n0", 1)).join(); });
  auto b = std::async(std::launch::async, [&] { return Client(client_options(server, "n1", 3)).join(); });
  JoinResult ra = get_within(a), rb = get_within(b);
  CHECK(ra.assignment.nnodes == 2);
  CHECK(ra.assignment.world_size == 4);
  CHECK(ra.node_rank != rb.node_rank);
  Client late(client_options(server, "n2", 1));
  CHECK_THROWS_WITH(late.join(), Contains("already formed with 2 nodes"));
}

TEST_CASE("loopback: a node that never joins fails the rendezvous, named", "[rendezvous][server]") {
  auto o = server_options(3, 3, {"worker-0", "worker-1", "worker-2"});
  o.store.join_timeout = milliseconds(800);
  Server server(o);
  server.start();
  auto a = std::async(std::launch::async, [&] { return Client(client_options(server, "worker-0", 1)).join(); });
  auto b = std::async(std::launch::async, [&] { return Client(client_options(server, "worker-1", 1)).join(); });
  for (auto* f : {&a, &b}) {
    REQUIRE(f->wait_for(milliseconds(20000)) == std::future_status::ready);
    CHECK_THROWS_WITH(f->get(), Contains("never joined: worker-2") && Contains("2/3 nodes joined"));
  }
  auto s = server.wait_until([](const StoreStatus& st) { return st.phase == Phase::failed; }, milliseconds(5000));
  CHECK(s.failed_nodes == std::vector<std::string>{"worker-2"});
}

TEST_CASE("loopback: a peer without the job token is refused and disconnected", "[rendezvous][server]") {
  Server server(server_options(1, 1));
  server.start();
  auto co = client_options(server, "n0", 1);
  co.token = "not-the-token-0123456789";
  Client wrong(co);
  CHECK_THROWS_WITH(wrong.join(), Contains("refused") && Contains("token"));

  Raw raw(server.port());
  REQUIRE(raw.fd >= 0);
  raw.send(encode_frame({{"op", "join"}, {"node", "x"}, {"host", "h"}, {"slots", 1}}));
  bool closed = false;
  std::string reply = raw.read_until_closed(closed);
  CHECK(closed);
  CHECK_THAT(error_in(reply), Contains("token"));
  CHECK(server.status().joined.empty());
  CHECK(server.counters().refused >= 2);
  // The right token still gets in.
  CHECK(Client(client_options(server, "n0", 1)).join().assignment.world_size == 1);
}

TEST_CASE("loopback: garbage, oversized and malformed frames are refused, the server goes on", "[rendezvous][server]") {
  Server server(server_options(1, 1));
  server.start();
  const std::vector<std::pair<std::string, std::string>> attacks{
      {"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "bad magic"},
      {std::string("MTR1\x7f\xff\xff\xff", 8), "over the limit"},
      {std::string("MTR1\0\0\0\x05", 8) + "hello", "not valid JSON"},
      {std::string("MTR1\0\0\0\0", 8), "empty frame"},
  };
  for (const auto& [bytes, why] : attacks) {
    Raw raw(server.port());
    REQUIRE(raw.fd >= 0);
    raw.send(bytes);
    bool closed = false;
    std::string reply = raw.read_until_closed(closed);
    INFO(why);
    CHECK(closed);
    CHECK_THAT(error_in(reply), Contains(why));
  }
  {
    std::string junk(2048, '\0');
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 7919u) & 0xff);
    Raw raw(server.port());
    raw.send(junk);
    bool closed = false;
    raw.read_until_closed(closed);
    CHECK(closed);
  }
  CHECK(server.counters().bad_frames >= 5);
  CHECK(Client(client_options(server, "n0", 2)).join().assignment.world_size == 2);
}

TEST_CASE("loopback: slow and silent peers are cut off and do not block others", "[rendezvous][server]") {
  Server server(server_options(1, 1));
  server.start();
  Raw silent(server.port());
  Raw slow(server.port());
  REQUIRE(silent.fd >= 0);
  REQUIRE(slow.fd >= 0);
  slow.send("MTR1");  // half a header, then nothing
  // A real client is served while both hang on.
  CHECK(Client(client_options(server, "n0", 1)).join().assignment.world_size == 1);
  bool closed1 = false, closed2 = false;
  silent.read_until_closed(closed1);
  slow.read_until_closed(closed2);
  CHECK(closed1);
  CHECK(closed2);
  CHECK(server.counters().timed_out >= 2);
}

TEST_CASE("loopback: the store listens only on the address it was given", "[rendezvous][server]") {
  auto o = server_options(1, 1);
  o.listen = {"127.0.0.2", 0};
  Server server(o);
  server.start();
  Raw elsewhere(server.port(), "127.0.0.1");
  CHECK(elsewhere.fd < 0);
  Raw there(server.port(), "127.0.0.2");
  CHECK(there.fd >= 0);

  auto taken = server_options(1, 1);
  taken.listen = {"127.0.0.2", server.port()};
  Server second(taken);
  CHECK_THROWS_WITH(second.start(), Contains("cannot listen on 127.0.0.2:"));
}

TEST_CASE("loopback: a node that stops heart-beating is reported to the others", "[rendezvous][server]") {
  auto o = server_options(2, 2, {"worker-0", "worker-1"});
  o.store.heartbeat_timeout = milliseconds(1000);
  Server server(o);
  server.start();
  Client c0(client_options(server, "worker-0", 1));
  Client c1(client_options(server, "worker-1", 1));
  join_both(c0, c1);

  std::promise<JobState> ended;
  auto ended_f = ended.get_future();
  HeartbeatLoop beat0(c0, milliseconds(50), milliseconds(5000), [&](const JobState& s) { ended.set_value(s); });
  {
    HeartbeatLoop beat1(c1, milliseconds(50), milliseconds(5000), [](const JobState&) {});
    std::this_thread::sleep_for(milliseconds(200));  // both alive for a while
  }  // worker-1's agent dies: its heartbeats stop
  JobState s = get_within(ended_f);
  CHECK(s.phase == Phase::failed);
  CHECK_THAT(s.reason, Contains("node 'worker-1' (node rank 1) stopped sending heartbeats"));
  CHECK(server.status().failed_nodes == std::vector<std::string>{"worker-1"});
}

TEST_CASE("loopback: a node reporting failure stops everyone, leaving finishes", "[rendezvous][server]") {
  Server server(server_options(2, 2));
  server.start();
  Client c0(client_options(server, "n0", 1));
  Client c1(client_options(server, "n1", 1));
  join_both(c0, c1);
  SECTION("failure") {
    c1.report_failure("local rank 0 exited with code 7");
    JobState s = c0.heartbeat();
    CHECK(s.phase == Phase::failed);
    CHECK_THAT(s.reason, Contains("'n1'") && Contains("exited with code 7"));
  }
  SECTION("both leave") {
    CHECK(c0.leave().phase == Phase::running);
    CHECK(c1.leave().phase == Phase::finished);
  }
}

TEST_CASE("loopback: an agent started before the store keeps trying until it is up", "[rendezvous][server]") {
  uint16_t port = 0;
  {
    // Ask the OS for a port that is free right now.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    ::close(fd);
  }
  auto o = server_options(1, 1);
  o.listen.port = port;
  Server server(o);
  ClientOptions co;
  co.server = {"127.0.0.1", port};
  co.token = kToken;
  co.host = "n0";
  co.join_timeout = milliseconds(15000);
  co.op_timeout = milliseconds(1000);
  co.poll_interval = milliseconds(20);
  auto j = std::async(std::launch::async, [&] { return Client(co).join(); });
  std::this_thread::sleep_for(milliseconds(200));
  server.start();
  CHECK(get_within(j).assignment.world_size == 1);
}

TEST_CASE("loopback: an unreachable store is a bounded error naming the endpoint", "[rendezvous][server]") {
  ClientOptions co;
  co.server = {"127.0.0.1", 1};  // nothing listens on port 1
  co.token = kToken;
  co.host = "n0";
  co.join_timeout = milliseconds(300);
  co.op_timeout = milliseconds(100);
  co.poll_interval = milliseconds(20);
  CHECK_THROWS_WITH(Client(co).join(), Contains("could not complete the rendezvous at 127.0.0.1:1"));
}

TEST_CASE("loopback: 300 idle connections and garbage senders do not keep a 2-node job from forming",
          "[rendezvous][server][admission]") {
  auto o = server_options(2, 2);
  o.auth_timeout = milliseconds(60000);  // only eviction and the per-peer limit can let the nodes in
  Server server(o);
  server.start();
  const int cap = server.max_connections();
  CHECK(cap == 2 * 2 + 64);
  std::vector<Raw> idle;
  for (int i = 0; i < 300; ++i) {  // 30 each from 10 "machines", under the per-peer limit
    std::string from = "127.0.1." + std::to_string(1 + i % 10);
    idle.emplace_back(server.port(), "127.0.0.1", from.c_str());
    REQUIRE(idle.back().fd >= 0);
  }
  std::vector<Raw> garbage;
  for (int i = 0; i < 20; ++i) {
    garbage.emplace_back(server.port(), "127.0.0.1", "127.0.2.1");
    REQUIRE(garbage.back().fd >= 0);
    // Half: a valid header announcing 4000 bytes, then a trickle (a slow loris); half: junk.
    garbage.back().send(i % 2 ? std::string("MTR1\0\0\x0f\xa0{\"op\"", 13) : std::string("\x16\x03\x01 junk", 9));
  }
  auto a = std::async(std::launch::async, [&] { return Client(client_options(server, "n0", 1)).join(); });
  auto b = std::async(std::launch::async, [&] { return Client(client_options(server, "n1", 2)).join(); });
  JoinResult ra = get_within(a, milliseconds(15000)), rb = get_within(b, milliseconds(15000));
  CHECK(ra.assignment.world_size == 3);
  CHECK(ra.node_rank + rb.node_rank == 1);
  auto c = server.counters();
  CHECK(c.evicted >= static_cast<uint64_t>(300 - cap));  // the junk senders may be closed for bad magic first
  CHECK(c.over_capacity == 0);
  int closed = 0;
  for (auto& r : idle) closed += r.closed_now() ? 1 : 0;
  CHECK(closed >= 300 - cap);
}

TEST_CASE("loopback: one address cannot hold more than its share of unauthenticated connections",
          "[rendezvous][server][admission]") {
  auto o = server_options(1, 1);
  o.auth_timeout = milliseconds(60000);
  o.max_unauthenticated_per_peer = 16;
  Server server(o);
  server.start();
  std::vector<Raw> flood;
  for (int i = 0; i < 40; ++i) flood.emplace_back(server.port(), "127.0.0.1", "127.0.3.1");
  // The node, from another address, is not affected; the flood's surplus was closed at accept.
  CHECK(Client(client_options(server, "n0", 1)).join().assignment.world_size == 1);
  CHECK(server.counters().peer_limited == 24);
  CHECK(server.counters().evicted == 0);
}

TEST_CASE("loopback: when every connection is authenticated, a new one is closed, not an old one",
          "[rendezvous][server][admission]") {
  auto o = server_options(1, 3);
  o.max_connections = 2;
  o.store.last_call = milliseconds(60000);
  Server server(o);
  server.start();
  Client c0(client_options(server, "n0", 1)), c1(client_options(server, "n1", 1));
  CHECK(c0.request({{"op", "join"}, {"host", "n0"}, {"slots", 1}})["phase"] == "joining");
  CHECK(c1.request({{"op", "join"}, {"host", "n1"}, {"slots", 1}})["phase"] == "joining");
  Raw extra(server.port());
  bool closed = false;
  extra.read_until_closed(closed, milliseconds(5000));
  CHECK(closed);
  CHECK(server.counters().over_capacity == 1);
  CHECK(server.counters().evicted == 0);
  CHECK(c0.heartbeat().phase == Phase::joining);  // the authenticated ones are still served
  CHECK(server.counters().accepted == 3);         // on their open connections
}

TEST_CASE("loopback: a waiting node's reply is held until the job forms, or max_hold", "[rendezvous][server][hold]") {
  const bool forms = GENERATE(false, true);
  auto o = server_options(2, 2);
  o.max_hold = milliseconds(forms ? 60000 : 300);
  Server server(o);
  server.start();
  auto co_for = [&](const std::string& host) {
    auto co = client_options(server, host, 1);
    co.op_timeout = milliseconds(30000);
    return co;
  };
  Client a(co_for("n0"));
  // A join is answered at once (the node learns, and prints, where the rendezvous stands)…
  CHECK(a.request({{"op", "join"}, {"host", "n0"}, {"slots", 1}, {"wait_ms", 60000}})["phase"] == "joining");
  // …and its polls are held.
  auto held = std::async(std::launch::async, [&] { return a.request({{"op", "heartbeat"}, {"wait_ms", 60000}}); });
  if (!forms) {  // nothing changes: answered "joining" once max_hold (not wait_ms) has passed
    CHECK(get_within(held, milliseconds(8000))["phase"] == "joining");
    return;
  }
  // The job forms: the held reply is answered then, long before max_hold.
  server.wait_until([](const StoreStatus& st) { return st.joined.size() == 1; }, milliseconds(5000));
  CHECK(held.wait_for(milliseconds(200)) == std::future_status::timeout);  // held
  JoinResult rb = Client(co_for("n1")).join();
  CHECK(rb.assignment.nnodes == 2);
  auto reply = get_within(held, milliseconds(10000));
  CHECK(reply["phase"] == "running");
  CHECK(reply["node_rank"] == 0);
}

TEST_CASE("loopback: an agent keeps beating while it tears its ranks down, so a slow teardown is not a lost node",
          "[rendezvous][server][restart]") {
  // The round changes (a failure elsewhere); each agent's HeartbeatLoop reports it, and the
  // agent then stops its ranks: SIGTERM, SIGKILL after --grace-period, which a rank stuck in a
  // collective with a vanished peer always needs. That can outlast --node-timeout: the loop
  // must go on beating until the agent is done (its destructor), or the store takes the
  // survivor for dead, forgets it, and the job never re-forms (the 3-node Slurm test hung so).
  ServerOptions so = server_options(2, 2);
  so.store.max_restarts = 1;
  so.store.heartbeat_timeout = milliseconds(600);
  Server server(so);
  server.start();
  Client c0(client_options(server, "n0", 1));
  Client c1(client_options(server, "n1", 1));
  join_both(c0, c1);
  auto reporter = [&](const Client& c, const std::string& host) {
    ClientOptions o = client_options(server, host, 1);
    o.node_id = c.node_id();
    return Client(o);
  };
  Client r0 = reporter(c0, "n0"), r1 = reporter(c1, "n1");
  std::promise<JobState> end0, end1;
  auto end0_f = end0.get_future(), end1_f = end1.get_future();
  {
    HeartbeatLoop b0(c0, milliseconds(50), milliseconds(5000), [&](const JobState& s) { end0.set_value(s); });
    HeartbeatLoop b1(c1, milliseconds(50), milliseconds(5000), [&](const JobState& s) { end1.set_value(s); });
    r1.report_failure("rank 1 exited with code 1");
    CHECK(get_within(end0_f).round == 1);
    CHECK(get_within(end1_f).round == 1);
    std::this_thread::sleep_for(milliseconds(1500));  // the teardown: 2.5 heartbeat timeouts
  }
  // As the agent does once its ranks are gone: is there a new round? Then join it.
  JobState s0 = r0.heartbeat(), s1 = r1.heartbeat();
  CHECK(s0.round == 1);
  CHECK(s1.round == 1);
  auto rj1 = std::async(std::launch::async, [&] { return c1.join(); });
  JoinResult rj0 = c0.join();
  CHECK(get_within(rj1).round == 1);
  CHECK(rj0.assignment.nnodes == 2);
  CHECK(server.status().lost.empty());
}

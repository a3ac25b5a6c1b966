// The etcd rendezvous protocol on the in-memory twin of etcd (MemoryKv); the same protocol
// against a real three-member cluster: tests/e2e/elastic/test_etcd_cluster.sh.
#include <catch2/catch.hpp>

#include <algorithm>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_memory.hpp"
#include "lib/rendezvous/etcd_mac.hpp"
#include "lib/rendezvous/etcd_rendezvous.hpp"

using namespace mtrain::rendezvous;

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

EtcdRendezvousOptions node(const std::string& host, int min, int max, int restarts = 0) {
  EtcdRendezvousOptions o;
  o.run_id = "job1";
  o.token = kToken;
  o.host = host;
  o.slots = 2;
  o.min_nodes = min;
  o.max_nodes = max;
  o.max_restarts = restarts;
  o.last_call = Duration(0);
  o.node_timeout = Duration(300);  // bounds each watch in real time; the ManualClock decides expiry
  o.join_timeout = Duration(60000);
  return o;
}

struct Pair {
  ManualClock clock;
  std::shared_ptr<MemoryKv> kv = std::make_shared<MemoryKv>(clock);
  std::unique_ptr<EtcdRendezvous> a, b;
  JoinResult ja, jb;
  void form(int restarts = 0) {
    a = std::make_unique<EtcdRendezvous>(node("node-a", 2, 2, restarts), kv, clock);
    b = std::make_unique<EtcdRendezvous>(node("node-b", 2, 2, restarts), kv, clock);
    auto fa = std::async(std::launch::async, [&] { return a->join(); });
    // Joins in this order: node-a's member key is created before node-b's starts.
    while (kv->range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    jb = b->join();
    ja = fa.get();
  }
};

}  // namespace

TEST_CASE("two nodes form a job: join order is node rank, one agreement for both", "[etcd_rendezvous]") {
  Pair p;
  p.form();
  CHECK(p.ja.node_rank == 0);
  CHECK(p.jb.node_rank == 1);
  CHECK(p.ja.assignment.world_size == 4);
  CHECK(p.jb.self().first_rank == 2);
  CHECK(p.jb.assignment.master_addr == "node-a");
  CHECK(p.ja.round == 0);
  CHECK(p.a->heartbeat().phase == Phase::running);
}

TEST_CASE("a job with another token under the same prefix is refused", "[etcd_rendezvous]") {
  Pair p;
  p.form();
  auto o = node("intruder", 1, 1);
  o.token = "ffffffffffffffffffffffffffffffff";
  EtcdRendezvous c(o, p.kv, p.clock);
  try {
    c.join();
    FAIL("joined");
  } catch (const mtrain::Error& e) {
    CHECK(std::string(e.what()).find("belongs to another job") != std::string::npos);
  }
  // Nothing the intruder did reached the job's keys.
  CHECK(p.kv->range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.size() == 2);
}

TEST_CASE("a node whose lease expires is lost: a new round while restarts are left", "[etcd_rendezvous]") {
  Pair p;
  p.form(1);
  p.clock.advance(Duration(200));
  p.a->heartbeat();  // node-a keeps its lease; node-b is silent
  p.clock.advance(Duration(200));
  p.kv->expire();
  JobState s = p.a->heartbeat();
  CHECK(s.phase == Phase::joining);
  CHECK(s.round == 1);
  CHECK(s.restart_reason.find("node-b lost") != std::string::npos);

  // node-a re-forms alone (elastic 1..2) as node rank 0 of round 1.
  auto o = node("node-a", 1, 2, 1);
  o.node_id = p.a->node_id();
  EtcdRendezvous again(o, p.kv, p.clock);
  JoinResult j = again.join();
  CHECK(j.round == 1);
  CHECK(j.restarts == 1);
  CHECK(j.node_rank == 0);
  CHECK(j.assignment.nnodes == 1);
}

TEST_CASE("a lost node with no restart left fails the job, naming it", "[etcd_rendezvous]") {
  Pair p;
  p.form(0);
  p.clock.advance(Duration(200));
  p.a->heartbeat();
  p.clock.advance(Duration(200));
  p.kv->expire();
  JobState s = p.a->heartbeat();
  CHECK(s.phase == Phase::failed);
  CHECK(s.reason.find("node-b lost") != std::string::npos);
  // The failed job's state and guard linger for the others to read, then expire with all else.
  p.clock.advance(Duration(1000));
  p.kv->expire();
  CHECK(p.kv->range_prefix("/mtrain/rdzv/job1/").kvs.empty());
}

TEST_CASE("a reported failure opens the next round once, both nodes see it", "[etcd_rendezvous]") {
  Pair p;
  p.form(1);
  JobState s = p.b->report_failure("rank 3 exited 1");
  CHECK(s.round == 1);
  CHECK(p.a->heartbeat().round == 1);
  CHECK(p.a->heartbeat().restart_reason.find("node 'node-b' reported a failure: rank 3 exited 1") != std::string::npos);
}

TEST_CASE("a finished job's keys are all removed", "[etcd_rendezvous]") {
  Pair p;
  p.form();
  CHECK(p.a->leave().phase == Phase::finished);
  CHECK(p.kv->size() > 0);
  p.b->leave();
  CHECK(p.kv->size() == 0);
}

TEST_CASE("an agreement not signed with the job's token is refused", "[etcd_rendezvous]") {
  ManualClock clock;
  auto kv = std::make_shared<MemoryKv>(clock);
  const std::string body = "mtrain-agreement 1 1 1 1 evil\nx 0 1 evil evil\n";
  const std::string json_body = R"({"ids":["x"],"hosts":["evil"],"addrs":["evil"],"slots":[1],"master_port":1})";
  for (const std::string& value : {std::string("00\n") + body, hmac_sha256_hex("another token", body) + "\n" + body,
                                   std::string(R"({"body":"{}","mac":"00"})")}) {
    kv->put("/mtrain/rdzv/job1/r/0/agreed", value, 0);
    EtcdRendezvous a(node("node-a", 1, 1), kv, clock);
    CHECK_THROWS_WITH(a.join(), Catch::Contains("not signed with this job's token"));
  }
  // Signed, in the format of an older mtrain: refused as such, not misread.
  kv->put("/mtrain/rdzv/job1/r/0/agreed", hmac_sha256_hex(kToken, json_body) + "\n" + json_body, 0);
  EtcdRendezvous a(node("node-a", 1, 1), kv, clock);
  CHECK_THROWS_WITH(a.join(), Catch::Contains("is not a rendezvous agreement of this mtrain"));
}

TEST_CASE("a host name with whitespace is refused before the node joins", "[etcd_rendezvous]") {
  ManualClock clock;
  auto kv = std::make_shared<MemoryKv>(clock);
  CHECK_THROWS_WITH(EtcdRendezvous(node("my host", 1, 1), kv, clock),
                    Catch::Contains("cannot take the node's host 'my host'"));
  CHECK(kv->size() == 0);
}

TEST_CASE("too few nodes by the join timeout: an error naming who came", "[etcd_rendezvous]") {
  ManualClock clock;
  auto kv = std::make_shared<MemoryKv>(clock);
  auto o = node("node-a", 2, 2);
  o.join_timeout = Duration(0);
  EtcdRendezvous a(o, kv, clock);
  CHECK_THROWS_WITH(a.join(), Catch::Contains("1 of at least 2 nodes joined (node-a)"));
}

TEST_CASE("a node arriving while the round runs does not hide a lost one", "[etcd_rendezvous]") {
  // Heartbeats count the round's member keys; a late node's key in the running round would make
  // up for a lost node's. It leaves the round's members once it sees the agreement without it.
  Pair p;
  p.form(1);
  auto late = node("node-c", 2, 2, 1);
  late.node_timeout = Duration(100);  // its watch for the next round wakes often (real time)
  EtcdRendezvous c(late, p.kv, p.clock);
  auto fc = std::async(std::launch::async, [&] {
    try {
      c.join();
    } catch (const mtrain::Error&) {}
  });
  // Until node-c has come and gone from round 0's members.
  for (int i = 0; i < 2000 && p.kv->range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.size() != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(p.kv->range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.size() == 2);
  p.clock.advance(Duration(200));
  p.a->heartbeat();
  p.clock.advance(Duration(200));
  p.kv->expire();  // node-b's lease (and node-c's: the manual clock stands still for its agent)
  JobState s = p.a->heartbeat();
  CHECK(s.round == 1);
  CHECK(s.restart_reason.find("node-b lost") != std::string::npos);
  p.a->report_failure("test over");
  fc.wait_for(std::chrono::seconds(5));
}

TEST_CASE("scale up: a node arriving while fewer than MAX run opens the next round, restarts left",
          "[etcd_rendezvous]") {
  ManualClock clock;
  auto kv = std::make_shared<MemoryKv>(clock);
  // Round 0 forms at MIN once the last call (0) is over; the agents that re-join for round 1 wait
  // a last call the manual clock never reaches, so round 1 forms at MAX (3).
  auto opts = [](const std::string& host, Duration last_call) {
    auto o = node(host, 2, 3);
    o.node_id = host;
    o.scale_up = true;
    o.last_call = last_call;
    return o;
  };
  EtcdRendezvous a(opts("node-a", Duration(0)), kv, clock), b(opts("node-b", Duration(0)), kv, clock);
  auto fa = std::async(std::launch::async, [&] { return a.join(); });
  while (kv->range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  b.join();
  REQUIRE(fa.get().assignment.world_size == 4);

  EtcdRendezvous c(opts("node-c", Duration(60000)), kv, clock);
  auto fc = std::async(std::launch::async, [&] { return c.join(); });
  JobState s;
  for (int i = 0; i < 2000 && (s = a.heartbeat()).round == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (s.round != 1) {  // no scale up: end node-c's wait (past its join timeout) rather than hang
    clock.advance(Duration(120000));
    fc.wait();
    FAIL("node-c's arrival did not open round 1");
  }
  CHECK(s.phase == Phase::joining);
  CHECK(s.membership_change);
  CHECK(s.restart_reason == "node 'node-c' is waiting to join: the job scales up from 2 nodes");
  // node-a and node-b re-join (as their agents would, the same node ids); node-c came first, yet
  // the survivors keep node ranks 0 and 1.
  EtcdRendezvous a1(opts("node-a", Duration(60000)), kv, clock), b1(opts("node-b", Duration(60000)), kv, clock);
  auto fb = std::async(std::launch::async, [&] { return b1.join(); });
  const JoinResult ja = a1.join(), jb = fb.get(), jc = fc.get();
  CHECK(ja.round == 1);
  CHECK(ja.restarts == 0);
  CHECK(ja.assignment.world_size == 6);
  CHECK(ja.node_rank == 0);
  CHECK(jb.node_rank == 1);
  CHECK(jc.node_rank == 2);
}

TEST_CASE("scale up off, or a full job: the arriving node waits for the next round", "[etcd_rendezvous]") {
  for (const bool full : {false, true}) {
    ManualClock clock;
    auto kv = std::make_shared<MemoryKv>(clock);
    auto o = [&](const std::string& host) {
      auto n = node(host, 2, full ? 2 : 3);
      n.scale_up = full;  // off when not full; on (but the job is full) when full
      n.node_timeout = Duration(100);
      return n;
    };
    EtcdRendezvous a(o("node-a"), kv, clock), b(o("node-b"), kv, clock);
    auto fa = std::async(std::launch::async, [&] { return a.join(); });
    while (kv->range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    b.join();
    fa.get();
    auto late = o("node-c");
    late.join_timeout = Duration(300);
    EtcdRendezvous c(late, kv, clock);
    auto fc = std::async(std::launch::async, [&] {
      try {
        c.join();
      } catch (const mtrain::Error&) {}
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK(a.heartbeat().round == 0);
    clock.advance(Duration(400));  // node-c's join timeout
    fc.wait_for(std::chrono::seconds(5));
  }
}

namespace {

// MemoryKv that counts the requests a real cluster would be sent, by kind.
struct CountingKv final : EtcdKv {
  explicit CountingKv(const Clock& clock) : kv(clock) {}
  MemoryKv kv;
  std::mutex mu;
  std::map<std::string, int> calls;
  void count(const char* what) {
    std::lock_guard lock(mu);
    ++calls[what];
  }
  int total() {
    std::lock_guard lock(mu);
    int n = 0;
    for (const auto& [what, k] : calls) n += k;
    return n;
  }
  RangeResult range_prefix(const std::string& p) override { return count("range"), kv.range_prefix(p); }
  RangeResult first_created(const std::string& p, int64_t l) override { return count("range"), kv.first_created(p, l); }
  void erase(const std::string& k) override { count("delete"), kv.erase(k); }
  std::vector<RangeResult> read_all(const std::vector<RangeOp>& ops) override {
    count("txn");
    auto out = kv.read_all(ops);
    // A follower that has not applied the latest member keys yet answers serializable counts short.
    if (lagging && std::all_of(ops.begin(), ops.end(), [](const RangeOp& op) { return op.serializable; }))
      for (size_t i = 0; i < ops.size(); ++i)
        if (ops[i].count_only && out[i].count > 0) --out[i].count;
    return out;
  }
  bool lagging = false;
  std::optional<KeyValue> get(const std::string& k) override { return count("range"), kv.get(k); }
  std::optional<KeyValue> create(const std::string& k, const std::string& v, int64_t l) override {
    return count("txn"), kv.create(k, v, l);
  }
  bool compare_and_put(const std::string& k, int64_t m, const std::string& v) override {
    return count("txn"), kv.compare_and_put(k, m, v);
  }
  void put(const std::string& k, const std::string& v, int64_t l) override { count("put"), kv.put(k, v, l); }
  void delete_prefix(const std::string& p) override { count("delete"), kv.delete_prefix(p); }
  TxnResult txn(const std::vector<TxnCompare>& c, const std::vector<TxnOp>& s, const std::vector<TxnOp>& f) override {
    return count("txn"), kv.txn(c, s, f);
  }
  int64_t grant_lease(Duration ttl) override { return count("lease grant"), kv.grant_lease(ttl); }
  bool keep_alive(int64_t l) override { return count("lease keep-alive"), kv.keep_alive(l); }
  void revoke(int64_t l) override { count("lease revoke"), kv.revoke(l); }
  WatchResult watch_prefix(const std::string& p, int64_t from, Duration t) override {
    return count("watch"), kv.watch_prefix(p, from, t);
  }
};

}  // namespace

TEST_CASE("a join costs three requests: the lease, one transaction and the watch", "[etcd_rendezvous]") {
  // The etcd cluster's CPU per join is what bounded forming at 512 nodes (35x the mtrain store):
  // it was seven requests a join (guard, lease, state, member put, reads, host list, watch and
  // the reads after it). The watch's event carries the agreement, so a woken node reads nothing.
  constexpr int kNodes = 8;
  ManualClock clock;
  auto kv = std::make_shared<CountingKv>(clock);
  std::vector<std::unique_ptr<EtcdRendezvous>> agents;
  for (int k = 0; k < kNodes; ++k) {
    auto o = node(fmt::format("node-{}", k), kNodes, kNodes);
    o.node_timeout = Duration(60000);  // no watch ends by its real-time bound while the job forms
    agents.push_back(std::make_unique<EtcdRendezvous>(o, kv, clock));
  }
  // The first node lays the job's guard and state (two creates and a second try of its join).
  auto first = std::async(std::launch::async, [&] { return agents[0]->join(); });
  while (kv->kv.range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::vector<std::future<JoinResult>> rest;
  for (int k = 1; k < kNodes; ++k)
    rest.push_back(std::async(std::launch::async, [&, k] { return agents[static_cast<size_t>(k)]->join(); }));
  std::vector<JoinResult> joined{first.get()};
  for (auto& f : rest) joined.push_back(f.get());
  std::set<int> ranks;
  std::string master;
  for (const auto& j : joined) {
    ranks.insert(j.node_rank);
    // Each agent lays out the ranks from the agreement's node list itself.
    CHECK(j.self().first_rank == 2 * j.node_rank);
    CHECK(j.assignment.world_size == 2 * kNodes);
    if (j.node_rank == 0) master = j.self().host;
  }
  CHECK(ranks.size() == kNodes);
  for (const auto& j : joined) CHECK(j.assignment.master_addr == master);
  // The agreement every agent reads is a line a node after its MAC (etcd_agreement.hpp).
  const auto agreed = kv->kv.get("/mtrain/rdzv/job1/r/0/agreed");
  REQUIRE(agreed);
  CHECK(agreed->value.size() < 120 + kNodes * (16 + 2 * 6 + 16));
  INFO("lease grants " << kv->calls["lease grant"] << ", transactions " << kv->calls["txn"] << ", watches "
                       << kv->calls["watch"] << ", ranges " << kv->calls["range"] << ", puts " << kv->calls["put"]);
  CHECK(kv->calls["lease grant"] == kNodes);
  // One join transaction each; the first node's second try and the one that laid the guard and
  // the state; the agreement's create by the node that completed the round.
  CHECK(kv->calls["txn"] == kNodes + 3);
  CHECK(kv->calls["watch"] == kNodes - 1);  // all but the one that formed the round
  CHECK(kv->calls["range"] == 1);  // its list of the members, once
  CHECK(kv->total() == 3 * kNodes + 3);
}

TEST_CASE("a heartbeat on a lagging member reads the counts again before it lists every member", "[etcd_rendezvous]") {
  // Serializable counts come from the member's own copy; under load a follower lags the leader
  // and counts short. Listing the members then made every such heartbeat O(N) in etcd.
  ManualClock clock;
  auto kv = std::make_shared<CountingKv>(clock);
  auto o = [](const std::string& host) {
    auto n = node(host, 2, 2);
    n.node_timeout = Duration(60000);
    return n;
  };
  EtcdRendezvous a(o("node-a"), kv, clock), b(o("node-b"), kv, clock);
  auto fa = std::async(std::launch::async, [&] { return a.join(); });
  while (kv->kv.range_prefix("/mtrain/rdzv/job1/r/0/n/").kvs.empty())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  b.join();
  fa.get();
  kv->lagging = true;
  kv->calls.clear();
  CHECK(a.heartbeat().phase == Phase::running);
  CHECK(kv->calls["range"] == 0);  // no member list
  CHECK(kv->calls["txn"] == 2);  // the serializable counts, then the linearizable ones
  CHECK(kv->calls["lease keep-alive"] == 1);
  // Without the lag a beat is the keep-alive and one serializable read.
  kv->lagging = false;
  kv->calls.clear();
  CHECK(a.heartbeat().phase == Phase::running);
  CHECK(kv->total() == 2);
}

// Both etcd clients (lib/rendezvous/etcd_grpc: etcd's gRPC API; etcd_http: its JSON gateway)
// against a real three-member etcd cluster on loopback (lib/bench/etcd_local), held to one
// contract: the EtcdKv operations the rendezvous relies on, a member lost mid-run, a watch's
// wait, and the errors that name what is wrong. Without etcd installed each case says so and
// passes nothing else.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <thread>

#include <boost/asio.hpp>
#include <fmt/format.h>

#include "lib/bench/etcd_local.hpp"
#include "lib/core/child_process.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/etcd_client.hpp"

using namespace mtrain;
using namespace mtrain::rendezvous;
using Api = config::EtcdApi;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Whether etcd is missing here; then the case says so and checks nothing else.
bool etcd_missing() {
  if (run_child({"bash", "-c", "command -v etcd && command -v etcdctl"}).exit_code == 0) return false;
  WARN("skipped: etcd is not installed (apt-get install etcd-server etcd-client)");
  return true;
}

std::string api_name(Api api) { return config::to_string(api); }

std::shared_ptr<EtcdKv> client(const std::vector<Endpoint>& members, Api api, int op_timeout_ms = 3000) {
  EtcdOptions o;
  o.endpoints = members;
  o.op_timeout = Duration(op_timeout_ms);
  return launch::connect_etcd(o, api);
}

// A port nothing listens on (bound and closed again).
Endpoint refusing_endpoint() {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  return {"127.0.0.1", a.local_endpoint().port()};
}

double seconds_since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

}  // namespace

TEST_CASE("etcd clients: keys, transactions, leases and watches behave as etcd's API says", "[e2e][etcd]") {
  if (etcd_missing()) return;
  bench::LocalEtcd cluster;
  const Api api = GENERATE(Api::Grpc, Api::Gateway);
  INFO("api " << api_name(api));
  auto kv = client(cluster.endpoints(), api);
  const std::string p = fmt::format("/mtrain-test/{}/", api_name(api));

  // create: absent → written; present → the existing value, nothing written.
  CHECK_FALSE(kv->create(p + "a", "1", 0));
  const auto existing = kv->create(p + "a", "2", 0);
  REQUIRE(existing);
  CHECK(existing->value == "1");
  const auto a = kv->get(p + "a");
  REQUIRE(a);
  CHECK(a->value == "1");
  CHECK(a->create_revision > 0);
  CHECK(a->mod_revision == a->create_revision);
  CHECK_FALSE(kv->get(p + "none"));

  // compare-and-put on the mod revision: one winner.
  CHECK(kv->compare_and_put(p + "a", a->mod_revision, "3"));
  CHECK_FALSE(kv->compare_and_put(p + "a", a->mod_revision, "4"));
  CHECK(kv->get(p + "a")->value == "3");

  // Values are bytes: NUL and 0xff pass through both APIs unchanged.
  const std::string bytes("x\0\xff\n\"y", 6);
  kv->put(p + "b", bytes, 0);
  CHECK(kv->get(p + "b")->value == bytes);

  // first_created: creation order, not key order.
  kv->put(p + "n/z", "first", 0);
  kv->put(p + "n/m", "second", 0);
  kv->put(p + "n/a", "third", 0);
  const RangeResult first = kv->first_created(p + "n/", 2);
  REQUIRE(first.kvs.size() == 2);
  CHECK(first.kvs[0].value == "first");
  CHECK(first.kvs[1].value == "second");
  CHECK(kv->range_prefix(p + "n/").kvs.size() == 3);

  // A transaction: compares, then reads (a count among them) and a put, at one revision.
  TxnResult t = kv->txn({TxnCompare{p + "a", TxnCompare::Target::value, "3"}},
                        {TxnOp::write(p + "c", "v"), TxnOp::read({p + "n/", true, true}), TxnOp::read({p + "a"})},
                        {TxnOp::read({p + "b"})});
  CHECK(t.succeeded);
  REQUIRE(t.reads.size() == 2);
  CHECK(t.reads[0].count == 3);
  CHECK(t.reads[0].kvs.empty());
  CHECK(t.reads[1].kvs.at(0).value == "3");
  t = kv->txn({TxnCompare{p + "a", TxnCompare::Target::value, "nope"}}, {TxnOp::write(p + "d", "v")},
              {TxnOp::read({p + "b"})});
  CHECK_FALSE(t.succeeded);
  REQUIRE(t.reads.size() == 1);
  CHECK(t.reads[0].kvs.at(0).value == bytes);
  CHECK_FALSE(kv->get(p + "d"));
  const auto reads = kv->read_all({{p + "a"}, {p + "n/", true, true, true}});
  REQUIRE(reads.size() == 2);
  CHECK(reads[1].count == 3);

  // Leases: a key bound to one goes when it is revoked; keep-alive says whether it still lives.
  const int64_t lease = kv->grant_lease(Duration(5000));
  CHECK(lease != 0);
  kv->put(p + "leased", "x", lease);
  CHECK(kv->keep_alive(lease));
  kv->revoke(lease);
  CHECK_FALSE(kv->get(p + "leased"));
  CHECK_FALSE(kv->keep_alive(lease));
  kv->revoke(lease);  // already gone: not an error

  // A watch sees a later put, and its event carries the value.
  const int64_t from = kv->range_prefix(p + "w/").revision + 1;
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    client(cluster.endpoints(), api)->put(p + "w/k", "event", 0);
  });
  const auto w0 = SteadyClock::now();
  WatchResult w = kv->watch_prefix(p + "w/", from, Duration(10000));
  writer.join();
  CHECK(w.changed);
  REQUIRE(w.puts.size() == 1);
  CHECK(w.puts[0].key == p + "w/k");
  CHECK(w.puts[0].value == "event");
  CHECK(seconds_since(w0) < 5);
  // From a revision already past, at once.
  w = kv->watch_prefix(p + "w/", from, Duration(10000));
  CHECK(w.changed);
  // Nothing under the prefix changes: the wait ends quietly at its time.
  const auto w1 = SteadyClock::now();
  w = kv->watch_prefix(p + "w/", kv->range_prefix(p + "w/").revision + 1, Duration(500));
  CHECK_FALSE(w.changed);
  CHECK(seconds_since(w1) >= 0.45);
  CHECK(seconds_since(w1) < 3.5);

  kv->delete_prefix(p);
  CHECK(kv->range_prefix(p).kvs.empty());
  kv->erase(p + "none");  // a missing key: nothing to do
}

TEST_CASE("etcd clients: a watch from a compacted revision ends at once as changed", "[e2e][etcd]") {
  if (etcd_missing()) return;
  bench::LocalEtcd cluster;
  const Api api = GENERATE(Api::Grpc, Api::Gateway);
  INFO("api " << api_name(api));
  auto kv = client(cluster.endpoints(), api);
  kv->put("/mtrain-test/c/x", "1", 0);
  kv->put("/mtrain-test/c/x", "2", 0);
  const int64_t now = kv->range_prefix("/mtrain-test/c/").revision;
  ChildOptions co;
  co.deadline = std::chrono::milliseconds(20000);
  const ChildResult compact =
      run_child({"etcdctl", "--endpoints", cluster.endpoint_list(), "compact", std::to_string(now)}, co);
  REQUIRE(compact.exit_code == 0);
  const auto t0 = SteadyClock::now();
  const WatchResult w = kv->watch_prefix("/mtrain-test/c/", 1, Duration(10000));
  CHECK(w.changed);
  CHECK(seconds_since(t0) < 3);
}

TEST_CASE("etcd clients: a member killed mid-run is skipped, the others answer", "[e2e][etcd]") {
  if (etcd_missing()) return;
  bench::LocalEtcd cluster;
  const Api api = GENERATE(Api::Grpc, Api::Gateway);
  INFO("api " << api_name(api));
  // Clients start at a random member; member 0 is killed under them and every client keeps working.
  std::vector<std::shared_ptr<EtcdKv>> clients;
  // The launcher's op timeout (3 s): when the killed member was the leader, the other two elect
  // a new one first (etcd's election timeout, 1-2 s), and writes wait for it.
  for (int k = 0; k < 6; ++k) clients.push_back(client(cluster.endpoints(), api));
  for (size_t k = 0; k < clients.size(); ++k) clients[k]->put(fmt::format("/mtrain-test/m/{}", k), "before", 0);
  cluster.kill_member(0);
  const auto t0 = SteadyClock::now();
  for (size_t k = 0; k < clients.size(); ++k) {
    clients[k]->put(fmt::format("/mtrain-test/m/{}", k), "after", 0);
    CHECK(clients[k]->get(fmt::format("/mtrain-test/m/{}", k))->value == "after");
    const int64_t lease = clients[k]->grant_lease(Duration(5000));
    CHECK(clients[k]->keep_alive(lease));
    CHECK_FALSE(
        clients[k]
            ->watch_prefix("/mtrain-test/m/", clients[k]->range_prefix("/mtrain-test/m/").revision + 1, Duration(100))
            .changed);
  }
  // A client that tried the dead member first paid at most an op timeout per call.
  CHECK(seconds_since(t0) < 60);
}

TEST_CASE("etcd clients: no member answering is one error naming each member and why", "[e2e][etcd]") {
  const Api api = GENERATE(Api::Grpc, Api::Gateway);
  INFO("api " << api_name(api));
  const std::vector<Endpoint> members = {refusing_endpoint(), refusing_endpoint()};
  auto kv = client(members, api, 1000);
  const auto t0 = SteadyClock::now();
  try {
    kv->get("/x");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitFailure);
    CHECK_THAT(e.message(), Catch::Contains("no member of the etcd cluster answered"));
    for (const auto& m : members) CHECK_THAT(e.message(), Catch::Contains(m.str() + ": connect: Connection refused"));
  }
  CHECK(seconds_since(t0) < 5);
}

TEST_CASE("etcd clients: a member that accepts and never answers costs the op timeout, not a hang", "[e2e][etcd]") {
  const Api api = GENERATE(Api::Grpc, Api::Gateway);
  INFO("api " << api_name(api));
  // Listening, never accepting: the kernel completes the TCP handshake, nothing ever answers.
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
  auto kv = client({{"127.0.0.1", silent.local_endpoint().port()}}, api, 500);
  for (int call = 0; call < 2; ++call) {
    const auto t0 = SteadyClock::now();
    CHECK_THROWS_WITH(call == 0 ? (void)kv->get("/x") : (void)kv->watch_prefix("/x", 1, Duration(60000)),
                      Catch::Contains("no member of the etcd cluster answered"));
    CHECK(seconds_since(t0) < 3);
  }
}

// The in-memory twin of etcd must keep etcd's transaction semantics where the rendezvous relies
// on them; the same transactions against a real cluster: tests/e2e/elastic/test_etcd_cluster.sh.
#include <catch2/catch.hpp>

#include "lib/rendezvous/etcd_memory.hpp"

using namespace mtrain::rendezvous;

TEST_CASE("a transaction's compares pick its branch, a value compare on a missing key fails", "[etcd_memory]") {
  ManualClock clock;
  MemoryKv kv(clock);
  const TxnCompare guard{"/j/guard", TxnCompare::Target::value, "mac"};
  // No guard yet: as etcd, comparing a missing key's value fails (even with an empty value).
  TxnResult t = kv.txn({guard}, {TxnOp::write("/j/n/a", "x")}, {TxnOp::read({"/j/guard"})});
  CHECK_FALSE(t.succeeded);
  REQUIRE(t.reads.size() == 1);
  CHECK(t.reads[0].kvs.empty());
  CHECK_FALSE(kv.get("/j/n/a").has_value());
  CHECK_FALSE(kv.txn({TxnCompare{"/j/guard", TxnCompare::Target::value, ""}}, {}, {}).succeeded);
  CHECK(kv.txn({TxnCompare{"/j/guard", TxnCompare::Target::create_revision, "", 0}}, {}, {}).succeeded);

  kv.put("/j/guard", "mac", 0);
  // The puts of one transaction share one revision, and its reads see them.
  t = kv.txn({guard}, {TxnOp::write("/j/n/a", "x"), TxnOp::write("/j/n/b", "y"), TxnOp::read({"/j/n/", true, true})},
             {});
  CHECK(t.succeeded);
  REQUIRE(t.reads.size() == 1);
  CHECK(t.reads[0].count == 2);
  CHECK(kv.get("/j/n/a")->mod_revision == kv.get("/j/n/b")->mod_revision);
  CHECK(t.revision == kv.get("/j/n/b")->mod_revision);
  const int64_t mod = kv.get("/j/n/a")->mod_revision;
  CHECK(kv.txn({TxnCompare{"/j/n/a", TxnCompare::Target::mod_revision, "", mod}}, {}, {}).succeeded);
  CHECK_FALSE(kv.txn({TxnCompare{"/j/n/a", TxnCompare::Target::mod_revision, "", mod - 1}}, {}, {}).succeeded);
}

TEST_CASE("a put bound to an expired lease fails the whole transaction", "[etcd_memory]") {
  ManualClock clock;
  MemoryKv kv(clock);
  const int64_t lease = kv.grant_lease(Duration(100));
  clock.advance(Duration(200));
  CHECK_THROWS(kv.txn({}, {TxnOp::write("/j/n/b", "y"), TxnOp::write("/j/n/a", "x", lease)}, {}));
  CHECK(kv.size() == 0);
}

TEST_CASE("a watch reports the keys written since its start revision, with their values", "[etcd_memory]") {
  ManualClock clock;
  MemoryKv kv(clock);
  kv.put("/j/other", "1", 0);
  const int64_t from = kv.get("/j/other")->mod_revision + 1;
  kv.put("/j/r/0/agreed", "body", 0);
  const WatchResult w = kv.watch_prefix("/j/r/0/agreed", from, Duration(10));
  CHECK(w.changed);
  REQUIRE(w.puts.size() == 1);
  CHECK(w.puts[0].value == "body");
  CHECK_FALSE(kv.watch_prefix("/j/r/0/agreed", from + 1, Duration(10)).changed);
}

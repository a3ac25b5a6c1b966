// The rendezvous benchmark (lib/bench/rendezvous_bench.cpp): a report row per node count.
#include <catch2/catch.hpp>

#include "lib/bench/rendezvous_bench.hpp"

using namespace mtrain;
using std::chrono::milliseconds;

TEST_CASE("rendezvous bench: the report has a row per node count", "[bench][rendezvous]") {
  bench::RendezvousBenchOptions o;
  o.nodes = {4, 16};
  o.heartbeat_interval = milliseconds(200);
  o.heartbeat_span = milliseconds(400);
  auto r = bench::run_rendezvous_bench(o);
  REQUIRE(r.table.rows.size() == 2);
  CHECK(r.table.rows[1][0] == "mtrain");  // the backend column, then the node count
  CHECK(r.table.rows[1][1] == "16");
  CHECK(r.doc["rows"][0]["form_s"].get<double>() > 0);
  CHECK(r.doc["rows"][1]["heartbeats_per_s"].get<double>() > 0);
}

#include <catch2/catch.hpp>

#include "lib/bench/comm.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::bench;
using Catch::Matchers::Contains;

TEST_CASE("comm_report turns rank 0's result into an nccl-tests table", "[bench][comm]") {
  json w = {{"world", 4}, {"backend", "gloo"}, {"device", "cpu"}, {"dtype", "float32"},
            {"results",
             {{{"op", "all_reduce"}, {"bytes", 1 << 26}, {"count", 1 << 24}, {"iters", 20}, {"time_s", 0.1}, {"max_error", 0.0}},
              {{"op", "all_gather"}, {"bytes", 1 << 26}, {"count", 1 << 24}, {"iters", 20}, {"time_s", 0.1}, {"max_error", 0.0}},
              {{"op", "broadcast"}, {"bytes", 1024}, {"count", 256}, {"iters", 20}, {"time_s", 1e-4}, {"max_error", 0.0}}}}};
  auto r = comm_report(w);
  REQUIRE(r.doc.at("rows").size() == 3);
  const auto& ar = r.doc.at("rows").at(0);
  CHECK(ar.at("algbw_gbps").get<double>() == Approx(0.67108864));
  CHECK(ar.at("busbw_gbps").get<double>() == Approx(0.67108864 * 1.5));
  CHECK(ar.at("redop") == "sum");
  CHECK(ar.at("correct") == true);
  CHECK(r.doc.at("rows").at(1).at("busbw_gbps").get<double>() == Approx(0.67108864 * 0.75));
  CHECK(r.doc.at("rows").at(2).at("root") == 0);
  CHECK(r.doc.at("wrong") == 0);
  const std::string text = render_text(r);
  CHECK(text.find("collective") == 0);
  CHECK_THAT(text, Contains("all_reduce"));
  CHECK_THAT(text, Contains("64M"));
  CHECK_THAT(text, Contains("1.007"));  // busbw of the all-reduce row
  CHECK_THAT(text, Contains("out of bounds values : 0 OK"));
  CHECK(r.plot.series.size() == 3);
}

TEST_CASE("a wrong result is flagged per row and counted", "[bench][comm]") {
  json w = {{"world", 2}, {"results", {{{"op", "all_reduce"}, {"bytes", 4096}, {"count", 1024}, {"iters", 5}, {"time_s", 1e-3}, {"max_error", 3.0}}}}};
  auto r = comm_report(w);
  CHECK(r.doc.at("wrong") == 1);
  CHECK(r.doc.at("rows").at(0).at("correct") == false);
  CHECK_THAT(render_text(r), Contains("WRONG"));
}

TEST_CASE("the worker's arguments carry the sweep, bad ops are refused first", "[bench][comm]") {
  CommBenchOptions o;
  o.ops = {"all_reduce", "broadcast"};
  o.min_bytes = 1024;
  o.max_bytes = 4096;
  o.iters = 7;
  o.warmup = 2;
  auto a = comm_worker_args(o, "/tmp/out.json");
  CHECK(a == std::vector<std::string>{"bench-comm", "--ops", "all_reduce,broadcast", "--sizes", "1024,2048,4096", "--iters", "7",
                                      "--warmup", "2", "--out", "/tmp/out.json"});
  o.ops = {"all_reduce", "alltoall"};
  CHECK_THROWS_WITH(comm_worker_args(o, ""), Contains("unknown collective 'alltoall'"));
}

TEST_CASE("bench comm without a worker says how to get one", "[bench][comm]") {
  CommBenchOptions o;
  o.worker_path = "";
  CHECK_THROWS_WITH(run_comm(o), Contains("needs mtrain-worker"));
}

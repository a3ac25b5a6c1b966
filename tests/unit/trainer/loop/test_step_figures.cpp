// The per-step figures of summary.json: phases booked apart from the steps, the loop's own
// collectives apart from training's, and step-time statistics after the warm-up steps.
#include <catch2/catch.hpp>

#include "lib/trainer/loop/step_figures.hpp"

using namespace mtrain::trainer;

TEST_CASE("comm_per_step: phases subtracted and totalled, metrics apart, the rest per step", "[loop][step_figures]") {
  CommCounters all{{"all_reduce", {12, 1200, 2400}},
                   {"all_gather", {5, 500, 900}},
                   {"all_reduce (metrics)", {4, 16, 32}}};
  std::map<std::string, CommCounters> phases{{"validation", {{"all_gather", {1, 100, 300}}}},
                                             {"export", {{"all_gather", {2, 200, 200}}}}};
  const CommPerStep f = comm_per_step(all, phases, 4);
  CHECK(f.comm["all_reduce"]["calls"] == 3.0);
  CHECK(f.comm["all_gather"]["calls"] == 0.5);            // (5 - 1 - 2) / 4
  CHECK(f.comm["all_gather"]["wire_bytes"] == 100.0);     // (900 - 300 - 200) / 4
  CHECK(f.wire_bytes == 600.0 + 100.0);
  CHECK(f.metrics["all_reduce (metrics)"]["calls"] == 1.0);
  CHECK(!f.comm.contains("all_reduce (metrics)"));
  CHECK(f.outside["validation"]["all_gather"]["payload_bytes"] == 100);
  CHECK(f.outside["export"]["all_gather"]["calls"] == 2);
  // A collective issued only outside the steps leaves no per-step entry.
  CHECK(!comm_per_step({{"broadcast", {1, 8, 8}}}, {{"checkpoint", {{"broadcast", {1, 8, 8}}}}}, 1)
             .comm.contains("broadcast"));
}

TEST_CASE("step_time_stats: warm-up steps left out while there are more", "[loop][step_figures]") {
  const auto s = step_time_stats({9.0, 3.0, 1.0, 2.0}, 1);
  CHECK(s["warmup_steps"] == 1);
  CHECK(s["timed_steps"] == 3);
  CHECK(s["min"] == 1.0);
  CHECK(s["median"] == 2.0);
  CHECK(s["max"] == 3.0);
  const auto all = step_time_stats({4.0, 2.0}, 5);  // no more steps than warm-up ones: all timed
  CHECK(all["warmup_steps"] == 0);
  CHECK(all["timed_steps"] == 2);
  CHECK(step_time_stats({}, 0)["timed_steps"] == 0);
}

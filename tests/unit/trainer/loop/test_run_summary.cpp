// summary.json from the loop's figures (lib/trainer/loop/run_summary.cpp): every key with its
// value and JSON type, throughput from the median step time, and the keys present only when
// they apply (gathered, tokens_per_s, final_val, stopped_by).
#include <catch2/catch.hpp>

#include "lib/trainer/loop/run_summary.hpp"

using namespace mtrain::trainer;
using nlohmann::json;

namespace {
RunFigures figures() {
  RunFigures f;
  f.strategy = "zero3";
  f.model = "gpt";
  f.precision = "bf16";
  f.world_size = 4;
  f.num_params = 1000;
  f.steps = 30;
  f.global_batch = 64;
  f.final_loss = 2.5;
  f.skipped_steps = 1;
  f.fullest = MemoryLedger{500, 600, 3000, 250, 260, 270, 280};
  f.peak_memory_bytes = 1 << 20;
  f.buffer_bytes = 8;
  f.formula.params = 500.4;
  f.formula.grads = 499.6;
  f.formula.optimizer = 3000;
  f.formula.formula = "16Ψ/N";
  f.ledger_world = 4;
  f.comm.comm = {{"all_gather", {{"calls", 2.0}}}};
  f.comm.wire_bytes = 1234.5;
  f.step_time = step_time_stats({9.0, 0.5, 0.25, 1.0}, 1);  // median 0.5 after one warm-up step
  return f;
}
}  // namespace

TEST_CASE("run_summary: every key, with the types summary.json has always had", "[loop][run_summary]") {
  const json s = run_summary(figures());
  CHECK(s["strategy"] == "zero3");
  CHECK(s["model"] == "gpt");
  CHECK(s["precision"] == "bf16");
  CHECK(s["world_size"] == 4);
  CHECK(s["num_params"] == 1000);
  CHECK(s["steps"] == 30);
  CHECK(s["global_batch"].is_number_float());
  CHECK(s["final_loss"] == 2.5);
  CHECK(s["skipped_steps"] == 1);
  CHECK(s["model_state_bytes_per_rank"] ==
        json{{"params", 500}, {"grads", 600}, {"optimizer", 3000}, {"gathered", 250}, {"buffers", 8}});
  CHECK(s["model_state_formula_bytes"] == json{{"params", 500},
                                               {"grads", 500},
                                               {"optimizer", 3000},
                                               {"total", 4000},
                                               {"formula", "16Ψ/N"},
                                               {"ledger_world", 4}});
  CHECK(s["model_state_formula_bytes"]["params"].is_number_integer());
  CHECK(s["comm_per_step"]["all_gather"]["calls"] == 2.0);
  CHECK(s["wire_bytes_per_step"] == 1234.5);
  CHECK(s["comm_metrics_per_step"] == json::object());
  CHECK(s["comm_outside_steps"] == json::object());
  CHECK(s["peak_memory_bytes"] == 1 << 20);
  CHECK(s["memory"] ==
        json{{"gathered_peak_bytes", 260}, {"unsharded_grads_peak_bytes", 270}, {"transient_peak_bytes", 280}});
  CHECK(s["step_time_median_s"] == 0.5);
  CHECK(s["step_time_s"]["timed_steps"] == 3);
  CHECK(s["throughput"] == json{{"samples_per_s", 128.0}});
  CHECK_FALSE(s.contains("final_val"));
  CHECK_FALSE(s.contains("stopped_by"));
  CHECK(s.size() == 20);
}

TEST_CASE("run_summary: the keys that apply only sometimes", "[loop][run_summary]") {
  RunFigures f = figures();
  f.language_model = true;
  f.tokens_per_sample = 256;
  f.fullest.gathered = -1;  // not reported by the strategy
  f.final_val = {{"mode", "val"}, {"loss", 2.0}};
  f.stopped_by = "SIGUSR1";
  const json s = run_summary(f);
  CHECK(s["throughput"]["tokens_per_s"] == 128.0 * 256);
  CHECK_FALSE(s["model_state_bytes_per_rank"].contains("gathered"));
  CHECK(s["final_val"]["loss"] == 2.0);
  CHECK(s["stopped_by"] == "SIGUSR1");

  f.step_time = step_time_stats({}, 0);  // no step timed: no throughput rather than a division by 0
  CHECK(run_summary(f)["throughput"]["samples_per_s"] == 0.0);
  CHECK(run_summary(f)["throughput"]["tokens_per_s"] == 0.0);
}

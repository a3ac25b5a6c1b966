#include "lib/trainer/loop/run_summary.hpp"

#include <cmath>

namespace mtrain::trainer {

using nlohmann::json;

json run_summary(const RunFigures& f) {
  const double med = f.step_time["median"].get<double>();
  json thr{{"samples_per_s", med > 0 ? f.global_batch / med : 0.0}};
  if (f.language_model) {
    thr["tokens_per_s"] = thr["samples_per_s"].get<double>() * static_cast<double>(f.tokens_per_sample);
  }
  json s{{"strategy", f.strategy},
         {"world_size", f.world_size},
         {"model", f.model},
         {"num_params", f.num_params},
         {"steps", f.steps},
         {"global_batch", f.global_batch},
         {"final_loss", f.final_loss},
         {"precision", f.precision},
         {"skipped_steps", f.skipped_steps},
         {"model_state_bytes_per_rank",
          {{"params", f.fullest.params}, {"grads", f.fullest.grads}, {"optimizer", f.fullest.optimizer}}},
         {"model_state_formula_bytes",
          {{"params", std::llround(f.formula.params)},
           {"grads", std::llround(f.formula.grads)},
           {"optimizer", std::llround(f.formula.optimizer)},
           {"total", std::llround(f.formula.total())},
           {"formula", f.formula.formula},
           {"ledger_world", f.ledger_world}}},
         {"comm_per_step", f.comm.comm},
         {"wire_bytes_per_step", f.comm.wire_bytes},
         {"comm_metrics_per_step", f.comm.metrics},
         // Totals over the run of what was not a training step, per phase.
         {"comm_outside_steps", f.comm.outside},
         {"peak_memory_bytes", f.peak_memory_bytes},
         // What the strategy held transiently (fullest rank, high-water marks over the run).
         {"memory",
          {{"gathered_peak_bytes", f.fullest.gathered_peak},
           {"unsharded_grads_peak_bytes", f.fullest.unsharded_grads_peak},
           {"transient_peak_bytes", f.fullest.transient_peak}}},
         {"step_time_median_s", med},
         {"step_time_s", f.step_time},
         {"throughput", thr}};
  if (f.fullest.gathered >= 0) s["model_state_bytes_per_rank"]["gathered"] = f.fullest.gathered;
  s["model_state_bytes_per_rank"]["buffers"] = f.buffer_bytes;
  if (!f.final_val.is_null()) s["final_val"] = f.final_val;
  if (!f.stopped_by.empty()) s["stopped_by"] = f.stopped_by;
  return s;
}

}  // namespace mtrain::trainer

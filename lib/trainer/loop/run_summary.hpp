#pragma once
// summary.json (docs/architecture.md §5) as a pure function of what the loop measured and
// gathered over ranks: the run's identity, the fullest rank's model-state bytes beside the
// ledger's formula, communication per training step (step_figures.hpp), peak and transient
// memory, step-time statistics and the throughput they imply.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/trainer/loop/ledger.hpp"
#include "lib/trainer/loop/step_figures.hpp"
#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

struct RunFigures {
  std::string strategy;   // the strategy's own name (Strategy::name())
  std::string model;
  std::string precision;
  int world_size = 1;
  int64_t num_params = 0;  // Ψ
  int64_t steps = 0;       // the step reached
  double global_batch = 0;  // samples per step over all ranks
  double final_loss = 0;
  int64_t skipped_steps = 0;  // fp16 overflows
  // Element-wise maxima over ranks: the fullest rank's ledger (gathered < 0: not reported) and
  // peak memory (CUDA allocator peak, or peak RSS on the CPU).
  MemoryLedger fullest;
  int64_t peak_memory_bytes = 0;
  int64_t buffer_bytes = 0;  // the model's buffers, replicated on every rank
  ModelStateBytes formula;   // what the ledger's formula predicts (job_ledger.hpp)
  int ledger_world = 1;      // N of the formula
  CommPerStep comm;
  nlohmann::json step_time;  // step_time_stats()
  bool language_model = false;
  int64_t tokens_per_sample = 0;  // read for a language model only
  nlohmann::json final_val;       // the last validation record; null: none
  std::string stopped_by;         // the signal that preempted the run; "": it ran to the end
};

nlohmann::json run_summary(const RunFigures& f);

}  // namespace mtrain::trainer

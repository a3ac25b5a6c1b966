#pragma once
// The training loop: steps or epochs, gradient accumulation, validation, MMEngine-style console
// on rank 0, metrics.jsonl, checkpoints and resume, model.pt and summary.json at the end.
//
// Preemption (preemption.hpp): after every step the ranks agree on a pending stop signal; on one
// they save a checkpoint, write summary.json with "stopped_by" and return stopped_by = signo.
//
// Data order is a pure function of the step: with S = samples_per_rank / (batch·accum) steps
// per epoch, step s reads micro-batch a from the sampler's epoch s/S at positions
// ((s mod S)·accum + a)·batch …, so a resumed run needs only the step to continue exactly.
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/loop/elastic_resume.hpp"
#include "lib/trainer/loop/train_job.hpp"
#include "lib/trainer/model/model.hpp"

namespace mtrain::trainer {

class Communicator;

struct TrainerParts {
  std::shared_ptr<TaskModel> model;     // fp32, on `device`
  std::shared_ptr<const Dataset> train;
  std::shared_ptr<const Dataset> val;   // may be null: no validation
  at::Device device = at::kCPU;
  // Testing: stop right after this step as if the process were killed (no final checkpoint,
  // no model.pt, no summary); -1 = run to the end.
  int64_t interrupt_after = -1;
  std::string heartbeat_file;  // MTRAIN_HEARTBEAT_FILE: touched after every step; "" = off
  std::string error_file;  // TORCHELASTIC_ERROR_FILE: rank 0's MLflow run id goes beside it
  std::string run_token;       // names this run's temporary checkpoint folders; same on every rank
  // Testing: called on every rank after each optimizer step (e.g. to raise a stop signal).
  std::function<void(int64_t step)> on_step;
  // A restarted attempt of an elastic job (elastic_resume.hpp): rank 0 reports the restart
  // after resuming and records the step reached after every step.
  RestartInfo restart;
};

struct TrainResult {
  int64_t steps = 0;
  double final_loss = 0;
  int stopped_by = 0;      // the stop signal that ended the run early (preemption), else 0
  std::string checkpoint;  // the last checkpoint written, "" if none
  nlohmann::json summary;  // as written to summary.json (rank 0; other ranks get the same keys)
};

TrainResult train(const TrainJob& job, Communicator& comm, const TrainerParts& parts,
                  std::ostream& console);

}  // namespace mtrain::trainer

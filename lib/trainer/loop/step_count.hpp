#pragma once
// How many steps a run trains: an epoch is the steps this rank's share of the training split
// fills (batch_size x grad_accum samples each); train.max_epochs > 0 counts epochs, else
// train.max_steps counts steps.
#include <cstdint>

#include "lib/trainer/data/sampler.hpp"
#include "lib/trainer/loop/train_job.hpp"

namespace mtrain::trainer {

struct StepCount {
  SamplerOptions sampler;  // this rank's order of the training split
  int64_t steps_per_epoch = 1;
  int64_t total = 0;
};

// Throws UsageError when the split holds fewer samples per rank than one step needs.
StepCount count_steps(const TrainJob& job, int64_t dataset_size, int rank, int world);

}  // namespace mtrain::trainer

#include "lib/trainer/loop/step_count.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

StepCount count_steps(const TrainJob& job, int64_t dataset_size, int rank, int world) {
  StepCount c;
  c.sampler.dataset_size = dataset_size;
  c.sampler.rank = rank;
  c.sampler.world = world;
  c.sampler.seed = job.seed;
  c.sampler.shuffle = job.data.shuffle;
  c.sampler.drop_last = job.data.drop_last;
  const int64_t per_rank = samples_per_rank(c.sampler);
  const int64_t per_step = job.batch_size * job.grad_accum;
  if (per_rank < per_step)
    throw UsageError(fmt::format("the training split has {} samples per rank, fewer than one step needs "
                                 "(batch_size {} x grad_accum {})",
                                 per_rank, job.batch_size, job.grad_accum),
                     "lower train.batch_size or train.grad_accum, or use more data");
  c.steps_per_epoch = per_rank / per_step;
  c.total = job.max_epochs > 0 ? job.max_epochs * c.steps_per_epoch : job.max_steps;
  return c;
}

}  // namespace mtrain::trainer

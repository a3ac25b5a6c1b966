#pragma once
// Learning-rate schedules: linear warmup from 0 to optim.lr over sched.warmup_steps, then
// constant, cosine (to sched.min_lr at the last step), step (×gamma every step_size) or
// LinearLR (factor start_factor → end_factor over total_iters, or the rest of the run).
#include <cstdint>
#include <string>

#include "lib/config/train_choices.hpp"

namespace mtrain::trainer {

struct ScheduleOptions {
  config::ScheduleName name = config::ScheduleName::Cosine;
  double lr = 1e-3;
  int64_t warmup_steps = 0;
  double min_lr = 0.0;
  int64_t step_size = 100;
  double gamma = 0.1;
  double start_factor = 1.0 / 3;
  double end_factor = 1.0;
  int64_t total_iters = 0;
};

// Learning rate of optimiser step `step` (0-based) in a run of `total_steps` steps.
double learning_rate(const ScheduleOptions& s, int64_t step, int64_t total_steps);

}  // namespace mtrain::trainer

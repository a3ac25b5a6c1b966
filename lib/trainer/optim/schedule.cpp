#include "lib/trainer/optim/schedule.hpp"

#include <algorithm>
#include <cmath>


namespace mtrain::trainer {

double learning_rate(const ScheduleOptions& s, int64_t step, int64_t total_steps) {
  if (step < s.warmup_steps) {
    return s.lr * static_cast<double>(step + 1) / static_cast<double>(s.warmup_steps);
  }
  const int64_t t = step - s.warmup_steps;
  const int64_t span = std::max<int64_t>(1, total_steps - s.warmup_steps);
  switch (s.name) {
    case config::ScheduleName::Constant: return s.lr;
    case config::ScheduleName::Cosine: {
      const double frac = std::min(1.0, static_cast<double>(t) / static_cast<double>(span));
      return s.min_lr + (s.lr - s.min_lr) * 0.5 * (1.0 + std::cos(M_PI * frac));
    }
    case config::ScheduleName::Step:
      return s.lr * std::pow(s.gamma, static_cast<double>(t / std::max<int64_t>(1, s.step_size)));
    case config::ScheduleName::Linear: {
      const int64_t iters = s.total_iters > 0 ? s.total_iters : span;
      const double frac = std::min(1.0, static_cast<double>(t) / static_cast<double>(iters));
      return s.lr * (s.start_factor + (s.end_factor - s.start_factor) * frac);
    }
  }
  config::no_such_value(s.name);
}

}  // namespace mtrain::trainer

#include "lib/trainer/optim/loss_scale.hpp"

#include <algorithm>
#include <cmath>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

LossScaler::LossScaler(const LossScaleOptions& o, bool enabled) : o_(o), enabled_(enabled) {
  if (!enabled_) return;
  if (o.loss_scale < 0 || o.loss_scale_window < 1 || o.hysteresis < 1 || o.min_loss_scale < 0) {
    throw UsageError("precision.* loss scaling settings are out of range",
                     "loss_scale >= 0, loss_scale_window >= 1, hysteresis >= 1, min_loss_scale >= 0");
  }
  scale_ = o.loss_scale > 0 ? o.loss_scale : std::ldexp(1.0, static_cast<int>(o.initial_scale_power));
  hysteresis_left_ = o.hysteresis;
}

void LossScaler::update(bool overflow) {
  if (!enabled_) return;
  if (overflow) {
    ++skipped_;
    clean_steps_ = 0;
    if (o_.loss_scale > 0) return;
    if (--hysteresis_left_ <= 0) {
      scale_ = std::max(scale_ / 2.0, o_.min_loss_scale);
      hysteresis_left_ = o_.hysteresis;
    }
    return;
  }
  if (o_.loss_scale > 0) return;
  if (++clean_steps_ % o_.loss_scale_window == 0) {
    scale_ *= 2.0;
    hysteresis_left_ = o_.hysteresis;
  }
}

}  // namespace mtrain::trainer

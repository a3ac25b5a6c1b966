#pragma once
// fp16 loss scaling with DeepSpeed's knobs (precision.* in the settings registry).
//
// Dynamic (loss_scale == 0): start at 2^initial_scale_power. A step whose gradients overflowed
// (inf/NaN on ANY rank — the caller agrees on that with one all-reduce before asking) is skipped;
// each overflow uses up one unit of hysteresis, and once none is left the scale halves (never
// below min_loss_scale) and hysteresis is refilled. After loss_scale_window consecutive clean
// steps the scale doubles. A fixed scale (loss_scale > 0) never changes, but overflowed steps
// are still skipped. Disabled (fp32/bf16): scale 1, nothing is skipped.
#include <cstdint>

namespace mtrain::trainer {

struct LossScaleOptions {
  double loss_scale = 0;  // 0 = dynamic
  int64_t initial_scale_power = 16;
  int64_t loss_scale_window = 1000;
  int64_t hysteresis = 2;
  double min_loss_scale = 1;
};

class LossScaler {
 public:
  LossScaler() = default;
  LossScaler(const LossScaleOptions& o, bool enabled);
  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  // Records the outcome of a step (overflow agreed across ranks).
  void update(bool overflow);
  int64_t skipped_steps() const { return skipped_; }
  void set_scale(double s) { scale_ = s; }

 private:
  LossScaleOptions o_;
  bool enabled_ = false;
  double scale_ = 1;
  int64_t clean_steps_ = 0;
  int64_t hysteresis_left_ = 1;
  int64_t skipped_ = 0;
};

}  // namespace mtrain::trainer

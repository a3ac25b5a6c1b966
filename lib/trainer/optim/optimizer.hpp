#pragma once
// Optimisers over flat buffers. A strategy hands each optimiser one contiguous fp32 parameter
// buffer and the gradient buffer of the same length: a DDP bucket, or (part 2) the shard of the
// flat parameters a ZeRO rank owns. State tensors have the parameter buffer's length, so they
// shard exactly like the parameters do. Update rules follow torch.optim (AdamW decoupled weight
// decay with bias correction; SGD with momentum/dampening 0/nesterov and L2 weight decay).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "lib/config/train_choices.hpp"

namespace mtrain::trainer {

struct OptimOptions {
  config::OptimizerName name = config::OptimizerName::Adamw;
  double weight_decay = 0.0;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // adamw
  double momentum = 0.0;                           // sgd
  bool nesterov = false;                           // sgd
};

class FlatOptimizer {
 public:
  virtual ~FlatOptimizer() = default;
  // One update of `param` from `grad` (both flat, same numel) at learning rate `lr`; counts a
  // step. With zero_grad the gradient is left zeroed (fused into the same pass where possible).
  virtual void step(at::Tensor param, const at::Tensor& grad, double lr, bool zero_grad = false) = 0;
  // The state tensors by name ("exp_avg", "exp_avg_sq" / "momentum_buffer"), each the length of
  // the parameter buffer; a checkpoint saves and restores them in place.
  virtual std::vector<std::pair<std::string, at::Tensor>> state() = 0;
  // Bytes of state per parameter element (8 for AdamW, 4 for SGD with momentum, else 0).
  virtual int64_t state_bytes_per_element() const = 0;
  int64_t steps() const { return steps_; }
  void set_steps(int64_t s) { steps_ = s; }

 protected:
  int64_t steps_ = 0;
};

// Names of the state tensors make_optimizer(o, …)->state() returns.
std::vector<std::string> optimizer_state_names(const OptimOptions& o);
std::unique_ptr<FlatOptimizer> make_optimizer(const OptimOptions& o, int64_t numel,
                                              const at::TensorOptions& opts);
std::unique_ptr<FlatOptimizer> make_adamw(const OptimOptions& o, int64_t numel,
                                          const at::TensorOptions& opts);
std::unique_ptr<FlatOptimizer> make_sgd(const OptimOptions& o, int64_t numel,
                                        const at::TensorOptions& opts);

}  // namespace mtrain::trainer

// SGD as torch.optim.SGD (dampening 0): d = g + wd·p; with momentum μ the buffer starts as d
// on the first step and is μ·b + d afterwards; nesterov uses d + μ·b, else b; p ← p − lr·d.
#include "lib/trainer/optim/optimizer.hpp"

namespace mtrain::trainer {

namespace {

class Sgd final : public FlatOptimizer {
 public:
  Sgd(const OptimOptions& o, int64_t numel, const at::TensorOptions& opts) : o_(o) {
    if (o.momentum > 0) buf_ = at::zeros({numel}, opts);
  }

  void step(at::Tensor param, const at::Tensor& grad, double lr, bool zero_grad) override {
    at::Tensor d = grad;
    if (o_.weight_decay != 0) d = grad.add(param, o_.weight_decay);
    if (o_.momentum > 0) {
      if (steps_ == 0) {
        buf_.copy_(d);
      } else {
        buf_.mul_(o_.momentum).add_(d);
      }
      d = o_.nesterov ? d.add(buf_, o_.momentum) : buf_;
    }
    param.add_(d, -lr);
    if (zero_grad) grad.zero_();
    ++steps_;
  }

  std::vector<std::pair<std::string, at::Tensor>> state() override {
    if (!buf_.defined()) return {};
    return {{"momentum_buffer", buf_}};
  }
  int64_t state_bytes_per_element() const override {
    return buf_.defined() ? buf_.element_size() : 0;
  }

 private:
  OptimOptions o_;
  at::Tensor buf_;
};

}  // namespace

std::unique_ptr<FlatOptimizer> make_sgd(const OptimOptions& o, int64_t numel,
                                        const at::TensorOptions& opts) {
  return std::make_unique<Sgd>(o, numel, opts);
}

}  // namespace mtrain::trainer

#include "lib/trainer/optim/optimizer.hpp"

namespace mtrain::trainer {

std::vector<std::string> optimizer_state_names(const OptimOptions& o) {
  switch (o.name) {
    case config::OptimizerName::Adamw: return {"exp_avg", "exp_avg_sq"};
    case config::OptimizerName::Sgd:
      return o.momentum > 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
  }
  config::no_such_value(o.name);
}

std::unique_ptr<FlatOptimizer> make_optimizer(const OptimOptions& o, int64_t numel,
                                              const at::TensorOptions& opts) {
  switch (o.name) {
    case config::OptimizerName::Adamw: return make_adamw(o, numel, opts);
    case config::OptimizerName::Sgd: return make_sgd(o, numel, opts);
  }
  config::no_such_value(o.name);
}

}  // namespace mtrain::trainer

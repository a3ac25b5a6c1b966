#include "mtrain/trainer/optim/optimizer.hpp"

#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

std::vector<std::string> optimizer_state_names(const OptimOptions& o) {
  if (o.name == "adamw") return {"exp_avg", "exp_avg_sq"};
  if (o.name == "sgd") return o.momentum > 0 ? std::vector<std::string>{"momentum_buffer"}
                                             : std::vector<std::string>{};
  throw Error("unknown optimiser '" + o.name + "'", "use adamw or sgd");
}

std::unique_ptr<FlatOptimizer> make_optimizer(const OptimOptions& o, int64_t numel,
                                              const at::TensorOptions& opts) {
  if (o.name == "adamw") return make_adamw(o, numel, opts);
  if (o.name == "sgd") return make_sgd(o, numel, opts);
  throw Error("unknown optimiser '" + o.name + "'", "use adamw or sgd");
}

}  // namespace mtrain::trainer

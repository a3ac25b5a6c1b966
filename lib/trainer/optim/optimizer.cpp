#include "mtrain/trainer/optim/optimizer.hpp"

#include "mtrain/config/registry.hpp"
#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

OptimOptions optim_options_from_job(const nlohmann::json& job) {
  using config::get;
  OptimOptions o;
  o.name = get(job, "optim.name").get<std::string>();
  o.weight_decay = get(job, "optim.weight_decay").get<double>();
  o.beta1 = get(job, "optim.beta1").get<double>();
  o.beta2 = get(job, "optim.beta2").get<double>();
  o.eps = get(job, "optim.eps").get<double>();
  o.momentum = get(job, "optim.momentum").get<double>();
  o.nesterov = get(job, "optim.nesterov").get<bool>();
  return o;
}

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

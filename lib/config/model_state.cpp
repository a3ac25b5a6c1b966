#include "lib/config/model_state.hpp"

#include <cmath>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::config {

namespace {

// How each part of the model state is held: replicated on every rank or split N ways.
struct Split {
  bool params = false;
  bool grads = false;
  bool optimizer = false;
};

Split split_of(StrategyName strategy, ShardingStrategy sharding) {
  switch (strategy) {
    case StrategyName::Ddp: return {};
    case StrategyName::Zero1: return {false, false, true};
    case StrategyName::Zero2: return {false, true, true};
    case StrategyName::Zero3: return {true, true, true};
    case StrategyName::Fsdp: break;
  }
  switch (sharding) {
    case ShardingStrategy::FullShard:
    case ShardingStrategy::HybridShard:
    case ShardingStrategy::ShardGradOp: return {true, true, true};
    case ShardingStrategy::NoShard: return {};
  }
  no_such_value(sharding);
}

std::string term(double coeff, bool sharded) {
  const std::string c =
      coeff == std::floor(coeff) ? fmt::format("{}", static_cast<int64_t>(coeff)) : fmt::format("{}", coeff);
  return sharded ? c + "Ψ/N" : c + "Ψ";
}

}  // namespace

double param_bytes(Precision precision) { return is_mixed(precision) ? 2 : 4; }

ModelStateBytes expected_model_state_bytes(StrategyName strategy, ShardingStrategy sharding_strategy,
                                           Precision precision, int64_t psi, int world) {
  if (world < 1) throw RuntimeFailure(fmt::format("model-state formula: world size {} is not positive", world));
  const double param_b = param_bytes(precision), grad_b = param_b;
  // Adam m and v (8); under mixed precision also the fp32 master copy: K = 12.
  const double optim_b = is_mixed(precision) ? 12 : 8;
  const Split l = split_of(strategy, sharding_strategy);
  const double p = static_cast<double>(psi), n = static_cast<double>(world);
  ModelStateBytes b;
  b.params = l.params ? param_b * p / n : param_b * p;
  b.grads = l.grads ? grad_b * p / n : grad_b * p;
  b.optimizer = l.optimizer ? optim_b * p / n : optim_b * p;
  // Collapse to the section-6 form: replicated coefficient Ψ + sharded coefficient Ψ/N.
  const double rep = (l.params ? 0 : param_b) + (l.grads ? 0 : grad_b) + (l.optimizer ? 0 : optim_b);
  const double shd = param_b + grad_b + optim_b - rep;
  if (rep > 0 && shd > 0) {
    b.formula = term(rep, false) + " + " + term(shd, true);
  } else {
    b.formula = rep > 0 ? term(rep, false) : term(shd, true);
  }
  return b;
}

int model_state_group_size(StrategyName strategy, ShardingStrategy sharding_strategy, int world, int ranks_per_node) {
  const bool hybrid = strategy == StrategyName::Fsdp && sharding_strategy == ShardingStrategy::HybridShard;
  return hybrid && ranks_per_node > 0 ? ranks_per_node : world;
}

}  // namespace mtrain::config

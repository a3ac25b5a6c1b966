#include "mtrain/trainer/loop/ledger.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "mtrain/core/counted.hpp"
#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

using config::OffloadDevice;
using config::Precision;
using config::ShardingStrategy;
using config::StrategyName;

namespace {

// How each part of the model state is held: replicated on every rank or split N ways.
struct Layout {
  bool params_sharded = false;
  bool grads_sharded = false;
  bool optimizer_sharded = false;
};

Layout layout_of(StrategyName strategy, ShardingStrategy sharding) {
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
    // SHARD_GRAD_OP keeps parameters gathered from forward through backward, then reshards
    // them (as torch's FSDP does): between steps, which is what the ledger counts, it holds
    // the same as FULL_SHARD; the difference is the gathered units during the step.
    case ShardingStrategy::ShardGradOp: return {true, true, true};
    case ShardingStrategy::NoShard: return {};
  }
  config::no_such_value(sharding);
}

std::string term(double coeff, bool sharded) {
  const std::string c = coeff == std::floor(coeff) ? fmt::format("{}", static_cast<int64_t>(coeff))
                                                   : fmt::format("{}", coeff);
  return sharded ? c + "Ψ/N" : c + "Ψ";
}

std::string human(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} {}", bytes, units[u]) : fmt::format("{:.2f} {}", bytes, units[u]);
}

}  // namespace

ModelStateBytes expected_model_state_bytes(StrategyName strategy, ShardingStrategy sharding_strategy,
                                           Precision precision, int64_t psi, int world) {
  if (world < 1) throw RuntimeFailure(fmt::format("memory ledger: world size {} is not positive", world));
  double param_b = 4, grad_b = 4, optim_b = 8;  // fp32 params/grads, Adam m and v
  if (config::is_mixed(precision)) {
    param_b = 2;
    grad_b = 2;
    optim_b = 12;  // K = 12: fp32 master (4) + Adam m, v (8)
  }
  const Layout l = layout_of(strategy, sharding_strategy);
  const double p = static_cast<double>(psi), n = static_cast<double>(world);
  ModelStateBytes b;
  b.params = l.params_sharded ? param_b * p / n : param_b * p;
  b.grads = l.grads_sharded ? grad_b * p / n : grad_b * p;
  b.optimizer = l.optimizer_sharded ? optim_b * p / n : optim_b * p;
  // Collapse to the section-6 form: replicated coefficient Ψ + sharded coefficient Ψ/N.
  const double rep = (l.params_sharded ? 0 : param_b) + (l.grads_sharded ? 0 : grad_b) +
                     (l.optimizer_sharded ? 0 : optim_b);
  const double shd = param_b + grad_b + optim_b - rep;
  if (rep > 0 && shd > 0) {
    b.formula = term(rep, false) + " + " + term(shd, true);
  } else {
    b.formula = rep > 0 ? term(rep, false) : term(shd, true);
  }
  return b;
}

int ledger_group_size(StrategyName strategy, ShardingStrategy sharding_strategy, int world,
                      int local_world_size) {
  const bool hybrid = strategy == StrategyName::Fsdp && sharding_strategy == ShardingStrategy::HybridShard;
  return hybrid && local_world_size > 0 ? local_world_size : world;
}

std::string offload_text(StrategyName strategy, OffloadDevice zero_optimizer_device,
                         OffloadDevice zero_param_device, bool fsdp_cpu_offload) {
  if (strategy == StrategyName::Fsdp) return fsdp_cpu_offload ? "parameter shards, fp32 master and optimizer state" : "";
  if (!config::is_zero(strategy)) return "";
  const bool params = strategy == StrategyName::Zero3 && zero_param_device == OffloadDevice::Cpu;
  const bool optim = zero_optimizer_device == OffloadDevice::Cpu;
  if (params && optim) return "parameter shards, fp32 master and optimizer state";
  if (params) return "parameter shards";
  return optim ? "fp32 master and optimizer state" : "";
}

std::string format_ledger_table(const LedgerReport& r, const ModelStateBytes& e) {
  std::string name = config::to_string(r.strategy);
  if (r.strategy == StrategyName::Fsdp) {
    name += "/" + config::to_string(r.sharding_strategy);
  }
  const std::string n = r.world_size > 0 && r.world_size != r.world
                            ? fmt::format("{} per shard group of world {}", counted(r.world, "rank"), r.world_size)
                            : fmt::format("{}", r.world);
  std::string out = fmt::format(
      "Memory ledger ({}, {}, Ψ = {} parameters, N = {}): model-state bytes per rank\n", name,
      config::to_string(r.precision), r.psi, n);
  out += fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", "part", "measured", "formula", "ratio");
  auto row = [&](const char* part, double measured, double expected) {
    const std::string ratio = expected > 0 ? fmt::format("{:.3f}", measured / expected) : "-";
    out += fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", part, human(measured), human(expected),
                       ratio);
  };
  row("params", static_cast<double>(r.params), e.params);
  row("grads", static_cast<double>(r.grads), e.grads);
  row("optimizer", static_cast<double>(r.optimizer), e.optimizer);
  row("total", static_cast<double>(r.params + r.grads + r.optimizer), e.total());
  if (r.buffers >= 0) {
    out += fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", "buffers", human(static_cast<double>(r.buffers)),
                       "(not in formula)", "");
  }
  if (r.gathered >= 0) {
    out += fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", "gathered", human(static_cast<double>(r.gathered)),
                       "(transient)", "");
  }
  out += fmt::format("  formula: {} = {} bytes\n", e.formula, static_cast<int64_t>(std::llround(e.total())));
  if (r.strategy == StrategyName::Zero3 && r.persistence_threshold > 0 && static_cast<double>(r.params) > e.params * 1.001) {
    out += fmt::format("  note: params is above the formula: units smaller than zero.stage3_param_persistence_threshold "
                       "({}) stay unsharded on every rank, as in DeepSpeed (0 shards every parameter)\n",
                       r.persistence_threshold);
  }
  if (!r.offload.empty()) {
    out += fmt::format("  offload: {} in host memory, counted in the rows above like the rest{}\n", r.offload,
                       r.on_cpu ? "; the ranks compute on the CPU, so offloading moves nothing" : "");
  }
  return out;
}

}  // namespace mtrain::trainer

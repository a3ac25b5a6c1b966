#include "lib/trainer/loop/ledger.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "lib/core/bytes_text.hpp"
#include "lib/core/counted.hpp"
#include "lib/core/error.hpp"

namespace mtrain::trainer {

using config::OffloadDevice;
using config::Precision;
using config::ShardingStrategy;
using config::StrategyName;

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
    out +=
        fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", part, human_bytes(measured, 2), human_bytes(expected, 2), ratio);
  };
  row("params", static_cast<double>(r.params), e.params);
  row("grads", static_cast<double>(r.grads), e.grads);
  row("optimizer", static_cast<double>(r.optimizer), e.optimizer);
  row("total", static_cast<double>(r.params + r.grads + r.optimizer), e.total());
  if (r.buffers >= 0) {
    out += fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", "buffers", human_bytes(static_cast<double>(r.buffers), 2),
                       "(not in formula)", "");
  }
  if (r.gathered >= 0) {
    out += fmt::format("  {:<10} {:>16} {:>16} {:>8}\n", "gathered", human_bytes(static_cast<double>(r.gathered), 2),
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

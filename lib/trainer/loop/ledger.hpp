#pragma once
// The memory ledger: the model-state bytes per rank a strategy reports (Strategy::memory()) beside
// what docs/architecture.md §6 predicts (config/model_state.hpp, the formula `mtrain estimate`
// uses too), for the table rank 0 prints at start and the keys summary.json carries. Gathered
// units (ZeRO-3/FSDP) are excluded: they are transient, reported separately.
#include <cstdint>
#include <string>

#include "lib/config/model_state.hpp"
#include "lib/config/names.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"

namespace mtrain::trainer {

using config::expected_model_state_bytes;
using config::ModelStateBytes;

// The table rank 0 prints at start: measured bytes per rank (params, grads, optimizer and the
// largest gathered unit when `gathered` ≥ 0) beside the formula, with Ψ and N.
struct LedgerReport {
  config::StrategyName strategy = config::StrategyName::Ddp;
  config::ShardingStrategy sharding_strategy = config::ShardingStrategy::FullShard;
  config::Precision precision = config::Precision::Fp32;
  int64_t psi = 0;
  int world = 1;  // N, the ranks the state is sharded over (config::model_state_group_size)
  int world_size = 0;  // all ranks, printed beside N when it differs (HYBRID_SHARD); 0 = same
  int64_t params = 0;  // measured, from Strategy::memory() (fullest rank)
  int64_t grads = 0;
  int64_t optimizer = 0;
  int64_t gathered = -1;  // largest gathered unit; -1 = not reported by the strategy
  int64_t buffers = -1;   // the model's buffers (BatchNorm statistics); -1 = not shown
  // Why a row may differ from the formula, said under the table: ZeRO-3 keeps units smaller than
  // zero.stage3_param_persistence_threshold unsharded on every rank (0 = none); offloaded state
  // ("optimizer state", "parameter shards and optimizer state") lives in host memory and is
  // counted in the rows like any other ("" = no offload), which moves nothing when ranks
  // compute on the CPU.
  int64_t persistence_threshold = 0;
  std::string offload;
  bool on_cpu = false;
};
std::string format_ledger_table(const LedgerReport& r, const ModelStateBytes& expected);

// LedgerReport::offload for a strategy and its offload settings: what is kept in host memory, or
// "" when nothing is.
std::string offload_text(config::StrategyName strategy, config::OffloadDevice zero_optimizer_device,
                         config::OffloadDevice zero_param_device, bool fsdp_cpu_offload);

}  // namespace mtrain::trainer

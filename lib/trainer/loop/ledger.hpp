#pragma once
// The memory ledger: model-state bytes per rank that docs/architecture.md §6 predicts for a
// strategy, beside what the strategy reports (Strategy::memory()), for the table rank 0 prints
// at start and the keys summary.json carries.
//
// Formula (Ψ parameters, N ranks in the sharding group, Adam):
//   fp32 (4 param + 4 grad + 8 Adam):            bf16/fp16 (2 param + 2 grad + K=12 master+Adam):
//     ddp / fsdp NO_SHARD      16Ψ                   16Ψ
//     zero1                    8Ψ + 8Ψ/N             4Ψ + 12Ψ/N
//     zero2 / fsdp SHARD_GRAD_OP 4Ψ + 12Ψ/N          2Ψ + 14Ψ/N
//     zero3 / fsdp FULL_SHARD  16Ψ/N                 16Ψ/N
//     fsdp HYBRID_SHARD        16Ψ/N with N = the shard group, the ranks of one node
//                              (ledger_group_size() gives the N to pass as `world`)
// Gathered units (ZeRO-3/FSDP) are excluded: they are transient, reported separately.
#include <cstdint>
#include <string>

#include "mtrain/config/names.hpp"
#include "mtrain/config/sharding_choices.hpp"
#include "mtrain/config/train_choices.hpp"

namespace mtrain::trainer {

// Bytes per rank, split as the strategy's MemoryLedger is.
struct ModelStateBytes {
  double params = 0;
  double grads = 0;
  double optimizer = 0;  // optimiser state, including the fp32 master copy under mixed precision
  std::string formula;   // e.g. "4Ψ + 12Ψ/N"
  double total() const { return params + grads + optimizer; }
};

// sharding_strategy is used for fsdp only. world: N ≥ 1, the size of the group the state is
// sharded over.
ModelStateBytes expected_model_state_bytes(config::StrategyName strategy, config::ShardingStrategy sharding_strategy,
                                           config::Precision precision, int64_t psi, int world);

// N of the formula for a run on `world` ranks: for fsdp HYBRID_SHARD the shard group of
// local_world_size ranks (the strategy's StrategyOptions::local_world_size; 0 = the whole world,
// as the strategy itself treats it), for every other strategy the world.
int ledger_group_size(config::StrategyName strategy, config::ShardingStrategy sharding_strategy, int world,
                      int local_world_size);

// The table rank 0 prints at start: measured bytes per rank (params, grads, optimizer and the
// largest gathered unit when `gathered` ≥ 0) beside the formula, with Ψ and N.
struct LedgerReport {
  config::StrategyName strategy = config::StrategyName::Ddp;
  config::ShardingStrategy sharding_strategy = config::ShardingStrategy::FullShard;
  config::Precision precision = config::Precision::Fp32;
  int64_t psi = 0;
  int world = 1;       // N, the ranks the state is sharded over (ledger_group_size)
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

#pragma once
// The model-state memory of docs/architecture.md §6: which parts a strategy shards and the bytes
// per rank of each — the one formula the trainer's memory ledger prints beside what it measures
// and `mtrain estimate` builds its rows on.
//
// Formula (Ψ parameters, N ranks in the sharding group, Adam):
//   fp32 (4 param + 4 grad + 8 Adam):            bf16/fp16 (2 param + 2 grad + K=12 master+Adam):
//     ddp / fsdp NO_SHARD      16Ψ                   16Ψ
//     zero1                    8Ψ + 8Ψ/N             4Ψ + 12Ψ/N
//     zero2                    4Ψ + 12Ψ/N            2Ψ + 14Ψ/N
//     zero3 / fsdp FULL_SHARD, SHARD_GRAD_OP  16Ψ/N  16Ψ/N
//     fsdp HYBRID_SHARD        16Ψ/N with N = the shard group, the ranks of one node
//                              (model_state_group_size() gives the N to pass as `world`)
// SHARD_GRAD_OP keeps its parameters gathered from forward through backward and reshards them
// after (as torch's FSDP does): between steps it holds what FULL_SHARD holds; the difference is
// the gathered units during the step, which — like every gathered unit — are transient, not here.
#include <cstdint>
#include <string>

#include "lib/config/names.hpp"
#include "lib/config/sharding_choices.hpp"
#include "lib/config/train_choices.hpp"

namespace mtrain::config {

// Bytes per rank, split as the strategies' memory ledgers are.
struct ModelStateBytes {
  double params = 0;
  double grads = 0;
  double optimizer = 0;  // optimiser state, including the fp32 master copy under mixed precision
  std::string formula;  // e.g. "4Ψ + 12Ψ/N"
  double total() const { return params + grads + optimizer; }
};

// Bytes per element of a parameter and of a gradient as the strategies hold them: 2 under mixed
// precision (bf16/fp16), else 4. The gathered units and buckets `mtrain estimate` adds are in it too.
double param_bytes(Precision precision);

// sharding_strategy is used for fsdp only. world: N ≥ 1, the size of the group the state is
// sharded over (one rank: nothing is split, every part is whole).
ModelStateBytes expected_model_state_bytes(StrategyName strategy, ShardingStrategy sharding_strategy,
                                           Precision precision, int64_t psi, int world);

// N of the formula for a run on `world` ranks: for fsdp HYBRID_SHARD the shard group of
// ranks_per_node ranks (0 = the whole world), for every other strategy the world.
int model_state_group_size(StrategyName strategy, ShardingStrategy sharding_strategy, int world, int ranks_per_node);

}  // namespace mtrain::config

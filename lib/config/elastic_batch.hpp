#pragma once
// Elastic batch arithmetic (DeepSpeed elasticity's idea): a job that fixes
// train.global_batch_size keeps it at every world size it is restarted at, by recomputing the
// gradient accumulation: accum = global / (micro batch x world). A world size that cannot keep it
// (global not a multiple of micro x world) is refused, naming the world sizes that can.
// Pure: the trainer decides with it after every (re)start, the launch checks before any rank runs.
#include <cstdint>
#include <string>
#include <vector>

namespace mtrain::config {

struct ElasticBatch {
  bool ok = false;
  int64_t grad_accum = 0;              // when ok: micro-batches per optimiser step on each rank
  std::vector<int64_t> valid_worlds;   // when !ok: the world sizes that keep the global batch
  std::string problem;                 // when !ok: one sentence naming the numbers
};

// Every world size w in [1, max_world] with global % (micro x w) == 0, ascending.
std::vector<int64_t> worlds_keeping_global_batch(int64_t global_batch, int64_t micro_batch, int64_t max_world);

// The accumulation that keeps `global_batch` at `world` ranks of `micro_batch` samples each.
// Precondition: global_batch, micro_batch, world >= 1. The refusal lists the valid worlds up to
// max(world, the largest divisor) (at most global/micro).
ElasticBatch elastic_grad_accum(int64_t global_batch, int64_t micro_batch, int64_t world);

// "1, 2, 3, 4, 6, 8, 12 and 24" (the first 16, then "… and N more").
std::string format_world_list(const std::vector<int64_t>& worlds);

}  // namespace mtrain::config

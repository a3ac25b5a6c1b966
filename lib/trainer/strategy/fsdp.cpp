// FSDP (torch FullyShardedDataParallel semantics, fsdp.* in the registry) over the sharded
// engine (sharded_engine.hpp for the gather-on-use protocol that stands in for module hooks).
//   units: fsdp.wrap_policy — one per TaskModel::block_prefixes() block (layer), per module
//     subtree of >= min_num_params (size), or none; the rest is the root unit, which stays
//     gathered through the forward like torch's root FSDP module. Each unit is flattened and
//     padded to a multiple of the shard group size.
//   FULL_SHARD     params, grads, optimiser sharded over the world; released after forward use
//                  and after backward (3Ψ(N−1)/N per step).
//   SHARD_GRAD_OP  params stay gathered from forward until their backward, then are released
//                  (2Ψ(N−1)/N per step; between steps only shards are resident).
//   NO_SHARD       replicated like DDP, gradients all-reduced.
//   HYBRID_SHARD   FULL_SHARD within a node (StrategyOptions::local_world_size ranks, which the
//                  worker takes from LOCAL_WORLD_SIZE: a shard sub-group), replicated across
//                  nodes (the gradient shards are all-reduced over a replica sub-group of the
//                  ranks with the same local rank).
//   forward_prefetch: the next unit of the recorded order is gathered ahead in forward;
//   backward_prefetch BACKWARD_PRE gathers the next unit (reverse order) when a unit's backward
//   begins, BACKWARD_POST when one has been reduced; limit_all_gathers allows one unit ahead;
//   cpu_offload keeps parameter shards, master and optimiser state in host memory.
//   Gradient reduce-scatters overlap the next unit's backward (one in flight), except over Gloo:
//   its reduce-scatter is an all-to-all into a second buffer of the unit's full size
//   (communicator.cpp), so one left in flight costs two block-sized buffers at the moment the
//   next block's gathered parameters, its gradients and the prefetched block are all alive —
//   the step's memory peak. Over Gloo each is completed where it is launched (the parameter
//   prefetch still overlaps the backward).
// ddp in bf16/fp16 is this engine with NO_SHARD units = DDP's buckets (make_ddp).
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/model/model.hpp"
#include "lib/trainer/strategy/sharded_engine.hpp"

namespace mtrain::trainer {

std::unique_ptr<Strategy> make_fsdp(const StrategyOptions& o, Communicator& comm) {
  const FsdpOptions& f = o.fsdp;
  ShardedConfig c;
  c.name = config::to_string(config::StrategyName::Fsdp);
  using config::ShardingStrategy;
  switch (f.sharding_strategy) {
    case ShardingStrategy::FullShard:
    case ShardingStrategy::HybridShard:
      c.grads_sharded = true;
      c.params_resident = false;
      c.reshard_after_forward = true;
      c.shard_size =
          f.sharding_strategy == ShardingStrategy::HybridShard && o.local_world_size > 0 ? o.local_world_size : 0;
      break;
    case ShardingStrategy::ShardGradOp:
      c.grads_sharded = true;
      c.params_resident = false;
      c.reshard_after_forward = false;
      break;
    case ShardingStrategy::NoShard:
      c.grads_sharded = false;
      c.params_resident = true;
      c.shard_size = 1;
      break;
  }
  c.forward_prefetch = f.forward_prefetch ? 1 : 0;  // one unit ahead
  c.backward_prefetch = f.backward_prefetch == config::BackwardPrefetch::None ? 0 : 1;
  c.backward_prefetch_post = f.backward_prefetch == config::BackwardPrefetch::BackwardPost;
  c.max_prefetch_units = f.limit_all_gathers ? 1 : 2;
  c.offload_params = f.cpu_offload;
  const int shard_group = c.shard_size > 0 ? c.shard_size : comm.world();
  c.overlap_comm = !(c.grads_sharded && shard_group > 1 && comm.backend() == BackendKind::Gloo);
  c.offload_optimizer = f.cpu_offload;
  const config::WrapPolicy policy = f.wrap_policy;
  const int64_t min_params = f.min_num_params;
  c.plan = [policy, min_params](const ParamList& p, torch::nn::Module& m) {
    std::vector<std::string> blocks;
    if (auto* tm = dynamic_cast<TaskModel*>(&m)) blocks = tm->block_prefixes();
    return fsdp_units(p, policy, blocks, min_params);
  };
  return make_sharded(std::move(c), o, comm);
}

}  // namespace mtrain::trainer

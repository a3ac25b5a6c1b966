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
//   HYBRID_SHARD   FULL_SHARD within a node (local_world_size ranks: a shard sub-group),
//                  replicated across nodes (the gradient shards are all-reduced over a replica
//                  sub-group of the ranks with the same local rank).
//   forward_prefetch: the next unit of the recorded order is gathered ahead in forward;
//   backward_prefetch BACKWARD_PRE gathers the next unit (reverse order) when one is gathered in
//   backward, BACKWARD_POST when one has been reduced; limit_all_gathers allows one unit ahead;
//   cpu_offload keeps parameter shards, master and optimiser state in host memory.
// ddp in bf16/fp16 is this engine with NO_SHARD units = DDP's buckets (make_ddp).
#include <cstdlib>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/model/model.hpp"
#include "mtrain/trainer/strategy/sharded_engine.hpp"

namespace mtrain::trainer {

namespace {

int local_world(const StrategyOptions& o, int world) {
  if (o.local_world_size > 0) return o.local_world_size;
  if (const char* v = std::getenv("LOCAL_WORLD_SIZE")) {
    const int n = std::atoi(v);
    if (n > 0) return n;
  }
  return world;
}

}  // namespace

std::unique_ptr<Strategy> make_fsdp(const StrategyOptions& o, Communicator& comm, const std::string& name) {
  const FsdpOptions& f = o.fsdp;
  ShardedConfig c;
  c.name = name;
  const std::string& ss = f.sharding_strategy;
  if (ss == "FULL_SHARD" || ss == "HYBRID_SHARD") {
    c.grads_sharded = true;
    c.params_resident = false;
    c.reshard_after_forward = true;
    c.shard_size = ss == "HYBRID_SHARD" ? local_world(o, comm.world()) : 0;
  } else if (ss == "SHARD_GRAD_OP") {
    c.grads_sharded = true;
    c.params_resident = false;
    c.reshard_after_forward = false;
  } else if (ss == "NO_SHARD") {
    c.grads_sharded = false;
    c.params_resident = true;
    c.shard_size = 1;
  } else {
    throw Error("fsdp.sharding_strategy '" + ss + "' is unknown",
                "use FULL_SHARD, SHARD_GRAD_OP, NO_SHARD or HYBRID_SHARD");
  }
  if (f.backward_prefetch != "BACKWARD_PRE" && f.backward_prefetch != "BACKWARD_POST" &&
      f.backward_prefetch != "NONE") {
    throw Error("fsdp.backward_prefetch '" + f.backward_prefetch + "' is unknown",
                "use BACKWARD_PRE, BACKWARD_POST or NONE");
  }
  c.forward_prefetch = f.forward_prefetch ? 1 : 0;  // one unit ahead
  c.backward_prefetch = f.backward_prefetch == "NONE" ? 0 : 1;
  c.backward_prefetch_post = f.backward_prefetch == "BACKWARD_POST";
  c.max_prefetch_units = f.limit_all_gathers ? 1 : 2;
  c.offload_params = f.cpu_offload;
  c.offload_optimizer = f.cpu_offload;
  const std::string policy = f.wrap_policy;
  const int64_t min_params = f.min_num_params;
  c.plan = [policy, min_params](const ParamList& p, torch::nn::Module& m) {
    std::vector<std::string> blocks;
    if (auto* tm = dynamic_cast<TaskModel*>(&m)) blocks = tm->block_prefixes();
    return fsdp_units(p, policy, blocks, min_params);
  };
  return make_sharded(std::move(c), o, comm);
}

}  // namespace mtrain::trainer

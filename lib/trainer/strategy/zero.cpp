// ZeRO stages 1-3 (DeepSpeed zero_optimization keys, zero.* in the registry) over the sharded
// engine (sharded_engine.hpp for the protocol):
//   stage 1: optimiser state + fp32 master sharded; gradients full, reduce-scattered on the sync
//            micro-step only (accumulation micro-steps send nothing); updated shards
//            all-gathered. Units = reduce buckets of reduce_bucket_size elements.
//   stage 2: + gradients reduce-scattered to their owner shard bucket by bucket while backward
//            runs (every micro-step, into the shard accumulator); only the owner keeps them.
//            At most two buckets of unreduced gradients exist (the one being reduced, the one
//            being filled; sharded_engine.hpp), so reduce_bucket_size is the memory knob:
//            DeepSpeed's default 5e8 makes any model under 500M parameters one bucket, a whole
//            gradient held at once; 'auto' (n_embd², the Hugging Face integration's) does not.
//   stage 3: + parameters sharded: one unit per module's own parameters (DeepSpeed fetches per
//            submodule), gathered on first use and released after (3Ψ(N−1)/N per step);
//            parameters under stage3_param_persistence_threshold form one persistent unit that
//            stays gathered. stage3_prefetch_bucket_size / max_live_parameters /
//            max_reuse_distance drive prefetch and release, offload_param_device keeps the
//            parameter shards in host memory, stage3_gather_16bit_weights_on_model_save makes
//            model.pt 16-bit.
// offload_optimizer_device cpu: fp32 master + optimiser state live in host memory and the
// update runs there (a no-op on CPU training). overlap_comm off: every reduction is waited for
// where it is launched; unset, it is on for stage 3 only (DeepSpeed's rule: stage 3 gains the
// most from overlapping its reduce-scatters with backward). contiguous_gradients (stages 2-3):
// each gradient is copied into its unit's flat reduction buffer the moment autograd finishes it
// and dropped, so a reduce bucket never exists twice (as autograd's gradients and as the flat
// copy); off, a unit's gradients are flattened when its last one arrives. allgather_bucket_size:
// the post-update all-gather runs per reduce bucket, so it is bounded by min(allgather, reduce)
// bucket sizes.
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/strategy/sharded_engine.hpp"
#include "lib/trainer/model/compiled_model.hpp"
#include "lib/trainer/model/torchscript.hpp"

namespace mtrain::trainer {

std::unique_ptr<Strategy> make_zero(int stage, const StrategyOptions& o, Communicator& comm) {
  if (stage < 1 || stage > 3) {
    throw UsageError(fmt::format("ZeRO stage {} does not exist", stage), "use zero.stage 1, 2 or 3");
  }
  const ZeroOptions& z = o.zero;
  using config::OffloadDevice;
  for (const auto& [key, v] : {std::pair<const char*, OffloadDevice>{"offload_optimizer_device", z.offload_optimizer_device},
                               {"offload_param_device", z.offload_param_device}}) {
    if (v == OffloadDevice::Nvme) {
      throw UsageError(fmt::format("zero.{} '{}' is not supported by this trainer", key, config::to_string(v)),
                       "use none or cpu (NVMe offload is not implemented)");
    }
  }
  if (z.offload_param_device != OffloadDevice::None && stage != 3) {
    throw UsageError("zero.offload_param_device needs stage 3", "use strategy zero3");
  }
  ShardedConfig c;
  c.name = config::strategy_text_of_zero_stage(stage);
  c.shard_size = 0;
  c.grads_sharded = stage >= 2;
  c.params_resident = stage < 3;
  c.reshard_after_forward = stage == 3;
  c.overlap_comm = z.overlap_comm.value_or(stage == 3);
  c.contiguous_gradients = z.contiguous_gradients;
  c.offload_optimizer = z.offload_optimizer_device == OffloadDevice::Cpu;
  c.offload_params = z.offload_param_device == OffloadDevice::Cpu;
  if (stage == 3) {
    c.forward_prefetch = z.stage3_prefetch_bucket_size;
    c.backward_prefetch = z.stage3_prefetch_bucket_size;
    c.max_live = z.stage3_max_live_parameters;
    c.max_reuse_distance = z.stage3_max_reuse_distance;
    c.gather_16bit_on_save = z.stage3_gather_16bit_weights_on_model_save;
    const int64_t threshold = z.stage3_param_persistence_threshold;
    c.plan = [threshold](const ParamList& p, torch::nn::Module& m) {
      // A TorchScript model's named blocks (fsdp.wrap_module_types) and a compiled package's
      // units (one program reads the whole block) are fetched whole, like their FSDP units; the
      // built-in models keep DeepSpeed's per-submodule units.
      std::vector<std::string> leaves;
      if (auto* tm = dynamic_cast<TaskModel*>(&m); tm && (is_scripted_model(*tm) || is_compiled_model(*tm)))
        leaves = tm->block_prefixes();
      return module_units(p, threshold, leaves);
    };
  } else {
    const int64_t cap = std::max<int64_t>(1, z.reduce_bucket_size);
    c.plan = [cap](const ParamList& p, torch::nn::Module&) { return bucket_units(p, cap); };
  }
  return make_sharded(std::move(c), o, comm);
}

}  // namespace mtrain::trainer

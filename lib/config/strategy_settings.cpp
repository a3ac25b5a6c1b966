// DeepSpeed-style ZeRO knobs, FSDP knobs and fp16 loss scaling. Names follow DeepSpeed's
// ds_config.json and torch FSDP so that imported files keep their meaning; defaults are
// DeepSpeed's and torch's own.
#include "lib/config/setting_builders.hpp"
#include "lib/config/sharding_choices.hpp"

namespace mtrain::config::detail {

namespace {
Setting with_auto(Setting s) {
  s.allow_auto = true;
  return s;
}
}  // namespace

void add_strategy_settings(Registry& r) {
  constexpr double kBig = 1e15;
  r.add(integer("zero.stage", 0, 0, 3,
                "DeepSpeed ZeRO stage. 0 follows `strategy`; 1-3 must agree with strategy "
                "zero1-zero3 (imports and the wizard write both)."));
  r.add(integer("zero.allgather_bucket_size", 500000000, 1, kBig,
                "Elements gathered per all-gather call when parameters are re-assembled."));
  r.add(with_auto(integer("zero.reduce_bucket_size", 500000000, 1, kBig,
                          "Elements reduced per reduce-scatter call; 'auto': n_embd^2 (as the "
                          "HuggingFace integration fills it).")));
  Setting overlap = with_auto(boolean("zero.overlap_comm", false,
                                     "Overlap gradient reduction with backward (costs bucket-sized "
                                     "buffers); 'auto': on for stage 3 only, as DeepSpeed."));
  overlap.default_value = "auto";
  r.add(std::move(overlap));
  r.add(boolean("zero.contiguous_gradients", true,
                "Copy gradients into one contiguous buffer as they are produced (less "
                "fragmentation)."));
  r.add(with_auto(integer("zero.stage3_prefetch_bucket_size", 50000000, 0, kBig,
                          "Stage 3: elements of parameters fetched ahead of use; 'auto': 0.9 x "
                          "n_embd^2.")));
  r.add(with_auto(integer("zero.stage3_param_persistence_threshold", 100000, 0, kBig,
                          "Stage 3: parameters smaller than this stay unsharded; 'auto': 10 x "
                          "n_embd.")));
  r.add(integer("zero.stage3_max_live_parameters", 1000000000, 0, kBig,
                "Stage 3: most gathered parameter elements alive at once before release."));
  r.add(integer("zero.stage3_max_reuse_distance", 1000000000, 0, kBig,
                "Stage 3: a parameter used again within this many elements is kept gathered."));
  r.add(choice("zero.offload_optimizer_device", to_string(OffloadDevice::None), choice_names<OffloadDevice>(),
               "Keep optimiser state (and its step) on this device instead of the GPU; stages "
               "1-3."));
  r.add(choice("zero.offload_param_device", to_string(OffloadDevice::None), choice_names<OffloadDevice>(),
               "Keep parameter shards on this device between uses; stage 3 only."));
  r.add(boolean("zero.stage3_gather_16bit_weights_on_model_save", false,
                "Stage 3: consolidate 16-bit weights into model.pt on save (else fp32)."));

  r.add(choice("fsdp.sharding_strategy", to_string(ShardingStrategy::FullShard), choice_names<ShardingStrategy>(),
               "FULL_SHARD: parameters, gradients and optimiser state sharded (like ZeRO-3); "
               "SHARD_GRAD_OP: parameters kept gathered between forward and backward (like "
               "ZeRO-2); NO_SHARD: like DDP; HYBRID_SHARD: full shard within a node, replicate "
               "across nodes."));
  r.add(integer("fsdp.min_num_params", 100000000, 1, kBig,
                "wrap_policy size: smallest module (in parameters) made its own FSDP unit."));
  r.add(choice("fsdp.wrap_policy", to_string(WrapPolicy::Layer), choice_names<WrapPolicy>(),
               "How the model is cut into FSDP units: one per transformer block/layer, by "
               "fsdp.min_num_params, or the whole model as one unit."));
  Setting wrap_types = text("fsdp.wrap_module_types", "",
             "torchscript models: the submodules that are blocks (FSDP and ZeRO-3 units, the "
             "blocks activation checkpointing recomputes), by class name without TorchScript's "
             "__torch__. path and ___torch_mangle_N (e.g. Block), or by dotted name (e.g. "
             "blocks.0); outermost match.");
  wrap_types.list = true;
  wrap_types.list_separator = ',';
  wrap_types.format = "a list of names ([Block, Linear] or Block,Linear)";
  r.add(std::move(wrap_types));
  r.add(boolean("fsdp.forward_prefetch", false,
                "Issue the next unit's all-gather before the current forward finishes."));
  r.add(choice("fsdp.backward_prefetch", to_string(BackwardPrefetch::BackwardPre), choice_names<BackwardPrefetch>(),
               "When the previous unit's parameters are gathered during backward: before the "
               "current unit's gradient (more memory, more overlap), after it, or not ahead."));
  r.add(boolean("fsdp.limit_all_gathers", true,
                "Limit in-flight all-gathers so memory stays bounded."));
  r.add(boolean("fsdp.cpu_offload", false, "Keep parameter shards in CPU memory between uses."));
  r.add(boolean("fsdp.activation_checkpointing", false,
                "Recompute each block's activations in backward instead of keeping them "
                "(every strategy honours it; the name follows accelerate's fsdp_config)."));
}

void add_precision_settings(Registry& r) {
  r.add(number("precision.loss_scale", 0, 0, 1e38,
               "fp16: a fixed loss scale, or 0 for dynamic scaling (raised after "
               "loss_scale_window clean steps, lowered on overflow)."));
  r.add(integer("precision.initial_scale_power", 16, 0, 64,
                "fp16 dynamic scaling starts at 2^initial_scale_power."));
  r.add(integer("precision.loss_scale_window", 1000, 1, 1LL << 40,
                "fp16: steps without overflow before the dynamic scale doubles."));
  r.add(integer("precision.hysteresis", 2, 1, 1 << 20,
                "fp16: overflows tolerated before the dynamic scale is lowered."));
  r.add(number("precision.min_loss_scale", 1, 0, 1e38, "fp16: the dynamic scale never goes below this."));
}

}  // namespace mtrain::config::detail

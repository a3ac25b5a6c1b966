#pragma once
// The choices of the sharded strategies' settings (zero.*, fsdp.*), each an enum with ONE name
// table (choice_table.hpp). The FSDP names are PyTorch's, so accelerate configs carry over.
#include "lib/config/choice_table.hpp"

namespace mtrain::config {

// fsdp.sharding_strategy.
enum class ShardingStrategy { FullShard, ShardGradOp, NoShard, HybridShard };
template <>
struct ChoiceTable<ShardingStrategy> {
  static constexpr const char* what = "sharding strategy";
  static constexpr ChoiceRow<ShardingStrategy> rows[] = {{ShardingStrategy::FullShard, "FULL_SHARD"},
                                                         {ShardingStrategy::ShardGradOp, "SHARD_GRAD_OP"},
                                                         {ShardingStrategy::NoShard, "NO_SHARD"},
                                                         {ShardingStrategy::HybridShard, "HYBRID_SHARD"}};
};

// fsdp.wrap_policy: how the model is cut into units (one per block, by size, or one).
enum class WrapPolicy { Layer, Size, None };
template <>
struct ChoiceTable<WrapPolicy> {
  static constexpr const char* what = "wrap policy";
  static constexpr ChoiceRow<WrapPolicy> rows[] = {
      {WrapPolicy::Layer, "layer"}, {WrapPolicy::Size, "size"}, {WrapPolicy::None, "none"}};
};

// fsdp.backward_prefetch.
enum class BackwardPrefetch { BackwardPre, BackwardPost, None };
template <>
struct ChoiceTable<BackwardPrefetch> {
  static constexpr const char* what = "backward prefetch";
  static constexpr ChoiceRow<BackwardPrefetch> rows[] = {{BackwardPrefetch::BackwardPre, "BACKWARD_PRE"},
                                                         {BackwardPrefetch::BackwardPost, "BACKWARD_POST"},
                                                         {BackwardPrefetch::None, "NONE"}};
};

// zero.offload_optimizer_device and zero.offload_param_device (DeepSpeed's names; nvme is
// accepted from DeepSpeed configs and refused by the trainer).
enum class OffloadDevice { None, Cpu, Nvme };
template <>
struct ChoiceTable<OffloadDevice> {
  static constexpr const char* what = "offload device";
  static constexpr ChoiceRow<OffloadDevice> rows[] = {
      {OffloadDevice::None, "none"}, {OffloadDevice::Cpu, "cpu"}, {OffloadDevice::Nvme, "nvme"}};
};

}  // namespace mtrain::config

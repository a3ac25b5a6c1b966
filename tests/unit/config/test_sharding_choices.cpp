// The sharded strategies' choice settings (lib/config/sharding_choices.hpp): one name table each.
#include <catch2/catch.hpp>

#include "choice_checks.hpp"
#include "lib/config/sharding_choices.hpp"

using namespace mtrain::config;
using mtrain::testing::check_choice_table;

TEST_CASE("sharding choices: fsdp.sharding_strategy", "[config][choices]") {
  check_choice_table<ShardingStrategy>("fsdp.sharding_strategy",
                                       {ShardingStrategy::FullShard, ShardingStrategy::ShardGradOp,
                                        ShardingStrategy::NoShard, ShardingStrategy::HybridShard});
  CHECK(to_string(ShardingStrategy::ShardGradOp) == "SHARD_GRAD_OP");  // PyTorch's spelling
}

TEST_CASE("sharding choices: fsdp.wrap_policy", "[config][choices]") {
  check_choice_table<WrapPolicy>("fsdp.wrap_policy", {WrapPolicy::Layer, WrapPolicy::Size, WrapPolicy::None});
}

TEST_CASE("sharding choices: fsdp.backward_prefetch", "[config][choices]") {
  check_choice_table<BackwardPrefetch>(
      "fsdp.backward_prefetch",
      {BackwardPrefetch::BackwardPre, BackwardPrefetch::BackwardPost, BackwardPrefetch::None});
}

TEST_CASE("sharding choices: the ZeRO offload devices share one table", "[config][choices]") {
  for (const char* key : {"zero.offload_optimizer_device", "zero.offload_param_device"})
    check_choice_table<OffloadDevice>(key, {OffloadDevice::None, OffloadDevice::Cpu, OffloadDevice::Nvme});
}

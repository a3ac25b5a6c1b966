#pragma once
// Shared by the strategy tests: a tiny gpt whose parameter count (835) is divisible by none of
// 2, 3, 4, its global batch split over ranks the way the sampler interleaves it, and the
// strategy configurations every test runs over.
#include <ATen/CPUGeneratorImpl.h>

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "lib/trainer/model/model.hpp"
#include "lib/trainer/strategy/strategy.hpp"
#include "../trainer/ranks.hpp"

namespace mtrain::trainer::testing {

inline ModelSpec tiny_gpt(int64_t n_embd = 5, int64_t n_head = 1) {
  ModelSpec s;
  s.name = mtrain::config::ModelName::Gpt;
  s.n_layer = 2;
  s.n_head = n_head;
  s.n_embd = n_embd;
  s.vocab_size = 7;
  s.block_size = 5;
  return s;
}

constexpr int64_t kRows = 12;  // global batch: divisible by 1, 2, 3, 4

// Rows r, r+N, … of the global batch of step s.
inline Batch gpt_batch(int64_t step, int rank, int world, const ModelSpec& s) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(500 + step);
  auto tokens = at::randint(s.vocab_size, {kRows, s.block_size + 1}, g);
  auto idx = at::arange(rank, kRows, world, at::kLong);
  auto mine = tokens.index_select(0, idx);
  return {mine.narrow(1, 0, s.block_size).contiguous(), mine.narrow(1, 1, s.block_size).contiguous()};
}

struct Config {
  std::string label;
  std::string strategy;
  StrategyOptions opts;
};

inline StrategyOptions base_options() {
  StrategyOptions o;
  o.first_bucket_mb = 64.0 / (1024 * 1024);
  o.bucket_cap_mb = 1600.0 / (1024 * 1024);
  o.optim.name = mtrain::config::OptimizerName::Adamw;
  o.optim.weight_decay = 0.01;
  o.grad_clip = 0.5;
  o.zero.reduce_bucket_size = 300;  // several buckets for the 835-parameter model
  o.zero.stage3_param_persistence_threshold = 0;
  return o;
}

// local_world for HYBRID_SHARD: 1 rank per node at world 2, 2 at world 4, 3 at world 3.
inline std::vector<Config> all_configs(int world) {
  std::vector<Config> out;
  auto add = [&](const std::string& label, const std::string& strategy, auto edit) {
    Config c{label, strategy, base_options()};
    edit(c.opts);
    out.push_back(c);
  };
  add("ddp", "ddp", [](StrategyOptions&) {});
  add("zero1", "zero1", [](StrategyOptions&) {});
  add("zero2", "zero2", [](StrategyOptions& o) { o.zero.overlap_comm = true; });
  add("zero3", "zero3", [](StrategyOptions&) {});
  add("zero3-persist-prefetch", "zero3", [](StrategyOptions& o) {
    o.zero.stage3_param_persistence_threshold = 40;
    o.zero.stage3_prefetch_bucket_size = 200;
    o.zero.stage3_max_live_parameters = 300;
    o.zero.overlap_comm = true;
  });
  add("fsdp-FULL_SHARD", "fsdp", [](StrategyOptions&) {});
  add("fsdp-FULL_SHARD-fwdprefetch-post-size", "fsdp", [](StrategyOptions& o) {
    o.fsdp.forward_prefetch = true;
    o.fsdp.backward_prefetch = mtrain::config::BackwardPrefetch::BackwardPost;
    o.fsdp.wrap_policy = mtrain::config::WrapPolicy::Size;
    o.fsdp.min_num_params = 100;
  });
  add("fsdp-SHARD_GRAD_OP", "fsdp", [](StrategyOptions& o) { o.fsdp.sharding_strategy = mtrain::config::ShardingStrategy::ShardGradOp; });
  add("fsdp-NO_SHARD", "fsdp", [](StrategyOptions& o) { o.fsdp.sharding_strategy = mtrain::config::ShardingStrategy::NoShard; });
  add("fsdp-HYBRID_SHARD", "fsdp", [world](StrategyOptions& o) {
    o.fsdp.sharding_strategy = mtrain::config::ShardingStrategy::HybridShard;
    o.local_world_size = world == 4 ? 2 : (world == 3 ? 3 : 1);
  });
  return out;
}

// The key third of an attention's c_attn.bias adds q·b_k to every score of a query's row, and
// softmax does not change under a shift of its row: its gradient is zero by the math, and what
// autograd returns for it is float rounding noise (~1e-9) that depends on the order in which the
// ranks' gradients were summed (world size, all-reduce or reduce-scatter, the CPU's kernels).
// AdamW divides that noise by its own root mean square, so those biases take steps decided by
// rounding. Comparisons of trained weights take them apart: `key_bias` holds them, the result the
// rest, each compared with its own bound.
inline std::vector<std::pair<std::string, at::Tensor>> without_key_bias(
    const std::vector<std::pair<std::string, at::Tensor>>& w, int64_t n_embd,
    std::vector<std::pair<std::string, at::Tensor>>* key_bias = nullptr) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  const std::string suffix = "attn.c_attn.bias";
  for (const auto& [name, t] : w) {
    const bool qkv_bias = name.size() >= suffix.size() &&
                          name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    if (!qkv_bias || t.numel() != 3 * n_embd) {
      out.emplace_back(name, t);
      continue;
    }
    out.emplace_back(name + "[query,value]",
                     at::cat({t.narrow(0, 0, n_embd), t.narrow(0, 2 * n_embd, n_embd)}));
    if (key_bias != nullptr) key_bias->emplace_back(name + "[key]", t.narrow(0, n_embd, n_embd));
  }
  return out;
}

inline double max_diff(const std::vector<std::pair<std::string, at::Tensor>>& a,
                       const std::vector<std::pair<std::string, at::Tensor>>& b) {
  if (a.size() != b.size()) return 1e30;
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first != b[i].first || !a[i].second.sizes().equals(b[i].second.sizes())) return 1e30;
    d = std::max(d, (a[i].second.to(at::kFloat) - b[i].second.to(at::kFloat)).abs().max().item<double>());
  }
  return d;
}

}  // namespace mtrain::trainer::testing

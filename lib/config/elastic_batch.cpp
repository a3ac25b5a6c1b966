#include "lib/config/elastic_batch.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace mtrain::config {

std::vector<int64_t> worlds_keeping_global_batch(int64_t global_batch, int64_t micro_batch, int64_t max_world) {
  std::vector<int64_t> out;
  if (global_batch < 1 || micro_batch < 1 || global_batch % micro_batch != 0) return out;
  const int64_t per_micro = global_batch / micro_batch;  // micro-batches per step over all ranks
  // The valid worlds are the divisors of per_micro: walk divisor pairs up to its square root.
  std::vector<int64_t> high;
  for (int64_t d = 1; d * d <= per_micro; ++d) {
    if (per_micro % d != 0) continue;
    if (d <= max_world) out.push_back(d);
    const int64_t q = per_micro / d;
    if (q != d && q <= max_world) high.push_back(q);
  }
  out.insert(out.end(), high.rbegin(), high.rend());
  return out;
}

std::string format_world_list(const std::vector<int64_t>& worlds) {
  constexpr size_t kShown = 16;
  std::string s;
  const size_t shown = std::min(worlds.size(), kShown);
  for (size_t i = 0; i < shown; ++i) {
    if (i > 0) s += (i + 1 == shown && shown == worlds.size()) ? " and " : ", ";
    s += std::to_string(worlds[i]);
  }
  if (worlds.size() > shown) s += fmt::format(" … and {} more", worlds.size() - shown);
  return s;
}

ElasticBatch elastic_grad_accum(int64_t global_batch, int64_t micro_batch, int64_t world) {
  ElasticBatch r;
  if (global_batch >= 1 && micro_batch >= 1 && world >= 1 && global_batch % (micro_batch * world) == 0) {
    r.ok = true;
    r.grad_accum = global_batch / (micro_batch * world);
    return r;
  }
  r.valid_worlds = worlds_keeping_global_batch(global_batch, micro_batch, global_batch / std::max<int64_t>(1, micro_batch));
  if (r.valid_worlds.empty()) {
    r.problem = fmt::format("train.global_batch_size {} is not a multiple of train.batch_size {}, so no "
                            "world size keeps it",
                            global_batch, micro_batch);
  } else {
    r.problem = fmt::format("train.global_batch_size {} cannot be kept at world size {} with train.batch_size {} "
                            "({} x {} does not divide it); the world sizes that keep it: {}",
                            global_batch, world, micro_batch, micro_batch, world,
                            format_world_list(r.valid_worlds));
  }
  return r;
}

}  // namespace mtrain::config

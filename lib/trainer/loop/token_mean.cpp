#include "lib/trainer/loop/token_mean.hpp"

namespace mtrain::trainer {

std::vector<double> token_mean_scales(const std::vector<int64_t>& counts, int64_t global, int world) {
  std::vector<double> out;
  out.reserve(counts.size());
  for (int64_t c : counts)
    out.push_back(
        global > 0 && c > 0 ? static_cast<double>(world) * static_cast<double>(c) / static_cast<double>(global) : 0.0);
  return out;
}

}  // namespace mtrain::trainer

#include "lib/estimate/activation_scaling.hpp"

#include <algorithm>

namespace mtrain::estimate {

LinearBytes fit_points(const nlohmann::json& points) {
  LinearBytes l;
  if (!points.is_array() || points.size() < 2) return l;
  // Least squares over every point: one high-water mark is noisy by a few MiB (the allocator's
  // state, a kernel's workspace that differs between batch 1 and the rest), which a slope taken
  // from batches 1 and 2 alone multiplies by the requested batch (measured: the mlp's 2.1 MiB step
  // from batch 1 to 2 made 67 MiB of activations at batch 32; its points at 1, 2, 4, 8 rise 0.3 MiB).
  double n = 0, sb = 0, sa = 0, sbb = 0, sba = 0;
  for (const auto& p : points) {
    const double b = p.at("batch").get<double>(), a = p.at("peak_above_bytes").get<double>();
    n += 1, sb += b, sa += a, sbb += b * b, sba += b * a;
  }
  const double den = n * sbb - sb * sb;
  if (den <= 0) return l;
  l.per_sample = std::max(0.0, (n * sba - sb * sa) / den);
  l.fixed = std::max(0.0, (sa - l.per_sample * sb) / n);
  return l;
}

LinearBytes scale_slice(double one_block, double two_blocks, int64_t blocks) {
  // Without recomputation and with it the same expression holds: the 2-block slice adds exactly
  // what each further block adds (all its activations, or only its saved input when recomputed),
  // and the 1-block slice holds the rest once.
  const double per_block = std::max(0.0, two_blocks - one_block);
  LinearBytes l;
  l.per_sample = std::max(0.0, one_block + static_cast<double>(std::max<int64_t>(blocks, 1) - 1) * per_block);
  return l;
}

}  // namespace mtrain::estimate

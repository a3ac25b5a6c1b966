#include "mtrain/estimate/activation_scaling.hpp"

#include <algorithm>

namespace mtrain::estimate {

LinearBytes fit_points(const nlohmann::json& points) {
  LinearBytes l;
  if (!points.is_array() || points.size() < 2) return l;
  const double b1 = points[0].at("batch").get<double>(), b2 = points[1].at("batch").get<double>();
  const double a1 = points[0].at("peak_above_bytes").get<double>(), a2 = points[1].at("peak_above_bytes").get<double>();
  if (b2 <= b1) return l;
  l.per_sample = std::max(0.0, (a2 - a1) / (b2 - b1));
  l.fixed = std::max(0.0, a1 - b1 * l.per_sample);
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

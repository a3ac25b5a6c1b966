#include <catch2/catch.hpp>

#include "mtrain/estimate/activation_scaling.hpp"

using namespace mtrain::estimate;

TEST_CASE("two batch points give the per-sample slope and the fixed part", "[estimate]") {
  const nlohmann::json points = {{{"batch", 1}, {"peak_above_bytes", 1300}}, {{"batch", 2}, {"peak_above_bytes", 2300}}};
  const LinearBytes l = fit_points(points);
  CHECK(l.per_sample == 1000);
  CHECK(l.fixed == 300);
  CHECK(l.at(16) == 16300);
  // A second point below the first (noise) is no negative slope; one point alone is nothing.
  CHECK(fit_points(nlohmann::json{{{"batch", 1}, {"peak_above_bytes", 500}}, {{"batch", 2}, {"peak_above_bytes", 400}}}).per_sample == 0);
  CHECK(fit_points(nlohmann::json{{{"batch", 1}, {"peak_above_bytes", 500}}}).at(8) == 0);
}

TEST_CASE("a 1- and 2-block slice scale to the model's block count", "[estimate]") {
  // 1 block: rest 700 + block 300; 2 blocks: rest + 2 blocks. 32 blocks: 700 + 32·300 per sample.
  const LinearBytes l = scale_slice(1000, 1300, 32);
  CHECK(l.per_sample == 700 + 32 * 300);
  CHECK(l.fixed == 0);
  CHECK(l.at(2) == 2 * (700 + 32 * 300));
  CHECK(scale_slice(1000, 1300, 1).per_sample == 1000);  // the 1-block slice is the model
  CHECK(scale_slice(1000, 900, 8).per_sample == 1000);   // noise: a block adds nothing, never less
}

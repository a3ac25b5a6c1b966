#include <catch2/catch.hpp>

#include "lib/estimate/activation_scaling.hpp"

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

TEST_CASE("more batch points are fitted by least squares, not by the first two", "[estimate]") {
  // The mlp's probe (MiB above the start): a 2.1 MiB step from batch 1 to 2 that batches 4 and 8
  // do not continue. The first two points alone gave 2.1 MiB per sample (67 MiB at batch 32).
  const double MiB = 1048576.0;
  const nlohmann::json points = {{{"batch", 1}, {"peak_above_bytes", 16.1 * MiB}},
                                 {{"batch", 2}, {"peak_above_bytes", 18.2 * MiB}},
                                 {{"batch", 4}, {"peak_above_bytes", 18.3 * MiB}},
                                 {{"batch", 8}, {"peak_above_bytes", 18.5 * MiB}}};
  const LinearBytes l = fit_points(points);
  CHECK(l.per_sample < 0.3 * MiB);
  CHECK(l.at(32) < 30 * MiB);
  // On a line the fit is the line.
  const LinearBytes e = fit_points(nlohmann::json{{{"batch", 1}, {"peak_above_bytes", 1300}},
                                                  {{"batch", 2}, {"peak_above_bytes", 2300}},
                                                  {{"batch", 4}, {"peak_above_bytes", 4300}},
                                                  {{"batch", 8}, {"peak_above_bytes", 8300}}});
  CHECK(e.per_sample == Approx(1000));
  CHECK(e.fixed == Approx(300));
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

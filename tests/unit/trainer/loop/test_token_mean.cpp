#include <catch2/catch.hpp>

#include "lib/trainer/loop/token_mean.hpp"

using mtrain::trainer::token_mean_scales;

TEST_CASE("token mean: each micro-batch's mean weighed by its share of the global count", "[loop][token_mean]") {
  // Rank 0 of 2 with micro-batches of 3 and 1 counted targets, rank 1 holding 4: global 8. The
  // strategies divide the summed gradients by 2, so weights 2*3/8 and 2*1/8 give rank 0's
  // targets their share (3 + 1)/8 of the step's mean.
  const auto s = token_mean_scales({3, 1}, 8, 2);
  REQUIRE(s.size() == 2);
  CHECK(s[0] == Approx(0.75));
  CHECK(s[1] == Approx(0.25));
  // Equal counts everywhere: DDP's 1/grad_accum.
  const auto eq = token_mean_scales({4, 4}, 16, 2);
  CHECK(eq[0] == Approx(0.5));
  CHECK(eq[1] == Approx(0.5));
}

TEST_CASE("token mean: a micro-batch with no counted target weighs 0", "[loop][token_mean]") {
  const auto s = token_mean_scales({0, 5}, 5, 1);
  CHECK(s[0] == 0.0);
  CHECK(s[1] == Approx(1.0));
  const auto none = token_mean_scales({0, 0}, 0, 3);
  CHECK(none[0] == 0.0);
  CHECK(none[1] == 0.0);
}

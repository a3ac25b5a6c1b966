#include <catch2/catch.hpp>

#include <csignal>

#include "lib/launch/scale_up.hpp"

using namespace mtrain::launch;

TEST_CASE("scale-up (--scale-up): the store re-forms only for MIN:MAX jobs and not when off", "[launch][scale_up]") {
  CHECK(store_scales_up(ScaleUp::checkpoint, true));
  CHECK(store_scales_up(ScaleUp::now, true));
  CHECK_FALSE(store_scales_up(ScaleUp::off, true));
  CHECK_FALSE(store_scales_up(ScaleUp::checkpoint, false));  // --nnodes N: no room to grow
}

TEST_CASE("scale-up (--scale-up): only a membership change at a checkpoint sends the notice", "[launch][scale_up]") {
  CHECK(round_end_notice(ScaleUp::checkpoint, true) == SIGUSR1);
  CHECK(round_end_notice(ScaleUp::now, true) == 0);
  CHECK(round_end_notice(ScaleUp::off, true) == 0);
  for (auto m : {ScaleUp::checkpoint, ScaleUp::now, ScaleUp::off})
    CHECK(round_end_notice(m, false) == 0);  // a failure: torn down at once
}

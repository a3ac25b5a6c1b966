#include "lib/launch/scale_up.hpp"

#include <csignal>

namespace mtrain::launch {

bool store_scales_up(ScaleUp mode, bool elastic_nnodes) { return elastic_nnodes && mode != ScaleUp::off; }

int round_end_notice(ScaleUp mode, bool membership_change) {
  return membership_change && mode == ScaleUp::checkpoint ? SIGUSR1 : 0;
}

}  // namespace mtrain::launch

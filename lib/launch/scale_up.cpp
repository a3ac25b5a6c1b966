#include "mtrain/launch/scale_up.hpp"

#include <csignal>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::launch {

ScaleUp parse_scale_up(const std::string& text) {
  if (text == "checkpoint") return ScaleUp::checkpoint;
  if (text == "now") return ScaleUp::now;
  if (text == "off") return ScaleUp::off;
  throw Error(fmt::format("--scale-up '{}' is not known", text),
              "Use checkpoint (save, then take the new node in), now (restart at once) or off (new nodes wait "
              "for the next failure).");
}

bool store_scales_up(ScaleUp mode, bool elastic_nnodes) { return elastic_nnodes && mode != ScaleUp::off; }

int round_end_notice(ScaleUp mode, bool membership_change) {
  return membership_change && mode == ScaleUp::checkpoint ? SIGUSR1 : 0;
}

}  // namespace mtrain::launch

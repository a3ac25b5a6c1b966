#pragma once
// The negative and textual switches of `mtrain launch` that do not map one-to-one onto a
// LaunchOptions field: --no-prefix, --no-local-rank, --ranks-filter, and the -m/--no-python
// contradiction. Kept here, as a pure function, so apps/mtrain/cmd_launch.cpp stays
// flags → options → one call and the rule has a unit test.
#include <string>

#include "mtrain/launch/launch.hpp"

namespace mtrain::launch {

struct LaunchSwitches {
  bool no_prefix = false;      // --no-prefix: console lines without the "[host:rank] " prefix
  bool no_local_rank = false;  // --no-local-rank: wins over --local-rank-arg (torchrun's default)
  std::string ranks_filter;    // --ranks-filter "0" or "0,3"; empty: every rank reaches the console
};

// Writes the switches into `o` (after the plain flags have been parsed into it). Throws
// mtrain::Error when -m/--module and --no-python are both set, or the ranks filter is not a list.
void apply_launch_switches(const LaunchSwitches& s, LaunchOptions& o);

}  // namespace mtrain::launch

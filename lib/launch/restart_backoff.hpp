#pragma once
// The pause before a restart (issue 17, item 13): a program that fails at once used to be
// restarted 1000 times in 2.4 s (and with --log-dir, 804 files in 0.4 s). Restarts that follow
// quick failures wait longer each time: base, 2·base, 4·base … up to cap. An attempt that ran
// for `healthy_after` counts as a recovery: the next failure starts the series again.
#include <chrono>

namespace mtrain::launch {

struct RestartBackoff {
  std::chrono::milliseconds base{1000};
  std::chrono::milliseconds cap{30000};
  std::chrono::milliseconds healthy_after{std::chrono::minutes(5)};
};

// The pause before the `streak`-th restart in a row of quick failures (streak >= 1):
// min(cap, base * 2^(streak-1)); zero for streak < 1.
std::chrono::milliseconds restart_delay(int streak, const RestartBackoff& b);

// The streak after an attempt that failed having run `ran` (previous streak `streak`).
int next_streak(int streak, std::chrono::milliseconds ran, const RestartBackoff& b);

}  // namespace mtrain::launch

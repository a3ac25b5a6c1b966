#include "lib/launch/restart_backoff.hpp"

#include <algorithm>

namespace mtrain::launch {

std::chrono::milliseconds restart_delay(int streak, const RestartBackoff& b) {
  if (streak < 1 || b.base.count() <= 0) return std::chrono::milliseconds(0);
  auto d = b.base;
  for (int i = 1; i < streak && d < b.cap; ++i) d *= 2;  // stops doubling at the cap: no overflow
  return std::min(d, b.cap);
}

int next_streak(int streak, std::chrono::milliseconds ran, const RestartBackoff& b) {
  return ran >= b.healthy_after ? 1 : streak + 1;
}

}  // namespace mtrain::launch

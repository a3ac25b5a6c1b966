// The restart backoff schedule (lib/launch/restart_backoff.cpp).
#include <catch2/catch.hpp>

#include "lib/launch/restart_backoff.hpp"

using namespace mtrain::launch;
using std::chrono::milliseconds;

TEST_CASE("restart backoff: doubling from base, capped, a long healthy attempt resets it", "[launch][backoff]") {
  RestartBackoff b;  // 1 s, cap 30 s, healthy after 5 min
  std::vector<long> want = {0, 1000, 2000, 4000, 8000, 16000, 30000, 30000};
  for (int s = 0; s < static_cast<int>(want.size()); ++s) CHECK(restart_delay(s, b).count() == want[s]);
  CHECK(restart_delay(1000, b) == b.cap);  // no overflow after many restarts
  CHECK(restart_delay(1 << 30, b) == b.cap);
  long total = 0;
  for (int s = 1; s <= 1000; ++s) total += restart_delay(s, b).count();
  CHECK(total > 1000L * 29000);  // 1000 quick restarts take hours, not 2.4 s
  CHECK(next_streak(0, milliseconds(10), b) == 1);
  CHECK(next_streak(5, milliseconds(10), b) == 6);
  CHECK(next_streak(5, std::chrono::minutes(6), b) == 1);
  RestartBackoff off;
  off.base = milliseconds(0);
  CHECK(restart_delay(7, off).count() == 0);
}

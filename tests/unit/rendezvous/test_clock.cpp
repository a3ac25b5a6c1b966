// The rendezvous clock (lib/rendezvous/clock.cpp): a manual clock that moves only when told, the
// real one that never goes back, and durations as messages show them.
#include <catch2/catch.hpp>

#include "lib/rendezvous/clock.hpp"

using namespace mtrain::rendezvous;
using std::chrono::milliseconds;

TEST_CASE("clock: a manual clock moves only by advance", "[rendezvous][clock]") {
  ManualClock c;
  const TimePoint t0 = c.now();
  CHECK(c.now() == t0);
  c.advance(milliseconds(1500));
  c.advance(milliseconds(0));
  CHECK(c.now() - t0 == milliseconds(1500));
  const Clock& as_clock = c;
  CHECK(as_clock.now() == t0 + milliseconds(1500));
}

TEST_CASE("clock: the real clock is one object and monotonic", "[rendezvous][clock]") {
  CHECK(&real_clock() == &real_clock());
  const TimePoint a = real_clock().now();
  CHECK(real_clock().now() >= a);
}

TEST_CASE("clock: durations below a second in ms, above in seconds with one decimal", "[rendezvous][clock]") {
  CHECK(format_duration(milliseconds(0)) == "0 ms");
  CHECK(format_duration(milliseconds(250)) == "250 ms");
  CHECK(format_duration(milliseconds(999)) == "999 ms");
  CHECK(format_duration(milliseconds(1000)) == "1.0 s");
  CHECK(format_duration(milliseconds(3040)) == "3.0 s");
  CHECK(format_duration(milliseconds(90500)) == "90.5 s");
}

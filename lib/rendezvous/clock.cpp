#include "lib/rendezvous/clock.hpp"

#include <fmt/format.h>

namespace mtrain::rendezvous {

const Clock& real_clock() {
  static const RealClock clock;
  return clock;
}

TimePoint ManualClock::now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return t_;
}

void ManualClock::advance(Duration d) {
  std::lock_guard<std::mutex> lock(mu_);
  t_ += d;
}

std::string format_duration(Duration d) {
  if (d.count() < 1000) return fmt::format("{} ms", d.count());
  return fmt::format("{:.1f} s", static_cast<double>(d.count()) / 1000.0);
}

}  // namespace mtrain::rendezvous

#pragma once
// Time for the rendezvous protocol. The store never reads the system clock itself: it asks a
// Clock, so the protocol (last call, join timeout, missed heartbeats) is tested with a
// ManualClock that only moves when the test says so.
#include <chrono>
#include <mutex>
#include <string>

namespace mtrain::rendezvous {

using Duration = std::chrono::milliseconds;
using TimePoint = std::chrono::steady_clock::time_point;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimePoint now() const = 0;
};

class RealClock final : public Clock {
 public:
  TimePoint now() const override { return std::chrono::steady_clock::now(); }
};

// The process-wide real clock.
const Clock& real_clock();

class ManualClock final : public Clock {
 public:
  TimePoint now() const override;
  void advance(Duration d);

 private:
  mutable std::mutex mu_;
  TimePoint t_{};  // starts at the epoch of steady_clock; only differences matter
};

// "3.0 s", "250 ms": how durations appear in messages.
std::string format_duration(Duration d);

}  // namespace mtrain::rendezvous

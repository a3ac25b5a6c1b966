#include "lib/rendezvous/heartbeat.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::rendezvous {

HeartbeatLoop::HeartbeatLoop(Membership& client, Duration interval, Duration give_up_after,
                             std::function<void(const JobState&)> on_end, int round)
    : client_(client), interval_(interval), give_up_(give_up_after), round_(round), on_end_(std::move(on_end)) {
  thread_ = std::thread([this] { run(); });
}

HeartbeatLoop::~HeartbeatLoop() { stop(); }

void HeartbeatLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HeartbeatLoop::run() {
  auto last_answer = std::chrono::steady_clock::now();
  std::string last_error;
  bool ended = false;  // on_end has been called: only keeping the node known to the store now
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wake_.wait_for(lock, interval_, [this] { return stopping_; })) return;
    }
    JobState s;
    try {
      s = client_.heartbeat();
      last_answer = std::chrono::steady_clock::now();
    } catch (const Error& e) {
      if (ended) return;  // the store is gone: nothing left to keep alive
      last_error = e.message();
      if (std::chrono::steady_clock::now() - last_answer < give_up_) continue;
      s.phase = Phase::failed;
      s.reason = fmt::format("lost the rendezvous store for more than {}: {}", format_duration(give_up_), last_error);
    }
    if (ended) continue;
    if (s.phase != Phase::running || s.round != round_) {
      ended = true;
      if (on_end_) on_end_(s);
      if (s.phase != Phase::running && s.phase != Phase::joining) return;  // failed or finished: no round to come
    }
  }
}

}  // namespace mtrain::rendezvous

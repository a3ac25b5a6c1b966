#pragma once
// --heartbeat-timeout: a rank that neither writes output nor touches its heartbeat file
// (MTRAIN_HEARTBEAT_FILE; mtrain-worker touches it every step, a Python rank can too) for the
// timeout is declared stalled, and the supervisor tears the job down (exit code kExitStalled).
//
// Pure bookkeeping over a Clock: the supervisor feeds it output events and the heartbeat file's
// modification stamps it observes; a change of stamp counts as progress at the time it is seen,
// so the file system's clock never has to agree with the steady clock.
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/rendezvous/clock.hpp"

namespace mtrain::launch {

// The launcher's exit code when a rank stalled (EX_TEMPFAIL: a hang is often worth a retry).
inline constexpr int kExitStalled = 75;

struct Stall {
  int rank = 0;
  pid_t pid = 0;
  std::string host;
  rendezvous::Duration silent{0};
  std::string describe() const;  // "rank 3 (pid 1234) on worker-1 made no progress for 60 s"
};

// By default (no --heartbeat-timeout, issue 17 item 10) a rank is watched only once it has
// beaten three times: from then on it is stalled when silent for max(timeout, factor x the
// longest gap between its beats seen so far). The gaps before the second beat (start-up, resume,
// the first step) are not measured. A rank that never touches the file (a program that ignores
// it) is never watched.
struct AdaptiveWatch {
  bool on = false;
  int factor = 20;
};

class ProgressWatch {
 public:
  ProgressWatch(rendezvous::Duration timeout, const rendezvous::Clock& clock, AdaptiveWatch adaptive = {});

  // Start watching a rank now (its start counts as progress).
  void add(int rank, pid_t pid, std::string host);
  void output(int rank);                      // the rank wrote something
  void heartbeat(int rank, int64_t stamp);    // the heartbeat file's stamp as observed now (-1: none)
  void finished(int rank);                    // exited: no longer watched
  // The rank silent for longest, if that is at least the timeout (adaptive: the rank silent past
  // its own limit for longest).
  std::optional<Stall> check() const;
  rendezvous::Duration timeout() const { return timeout_; }

 private:
  struct Entry {
    int rank = 0;
    pid_t pid = 0;
    std::string host;
    rendezvous::TimePoint last;
    int64_t stamp = -1;
    bool done = false;
    int beats = 0;                        // changes of the heartbeat file seen
    rendezvous::TimePoint last_beat;
    rendezvous::Duration longest_gap{0};  // between beats, from the second to the third on
  };
  rendezvous::Duration limit(const Entry& e) const;
  Entry* find(int rank);
  rendezvous::Duration timeout_;
  const rendezvous::Clock& clock_;
  AdaptiveWatch adaptive_;
  std::vector<Entry> ranks_;
};

// The modification time of `path` in nanoseconds, or -1 when it cannot be read.
int64_t file_stamp(const std::string& path);

}  // namespace mtrain::launch

#pragma once
// Stopping cleanly when asked, and proving liveness while running.
//
// Preemption protocol: SIGUSR1 (Slurm's warning before the time limit, forwarded by the sbatch
// templates), SIGTERM (the launcher or the scheduler) and SIGINT (Ctrl-C) only store their number
// in a lock-free atomic (async-signal-safe). The loop polls it at the end of every optimizer step
// and all-reduces it, so every rank takes the same decision at the same step even when only one
// rank got the signal (deciding alone would leave the others blocked in a collective); then all
// ranks save a checkpoint together, rank 0 writes the summary (`stopped_by`), and the worker
// exits 128 + signo, the code a shell reports for that signal.
//
// Heartbeat: when MTRAIN_HEARTBEAT_FILE is set, the file's mtime is updated after every step and
// every ~16 MiB of a long checkpoint write/verify; the launcher's --heartbeat-timeout treats a
// stale mtime as a hung rank.
#include <string>

namespace mtrain::trainer {

// Installs the handlers for SIGUSR1, SIGTERM and SIGINT (idempotent).
void install_stop_signal_handlers();
// Puts the default dispositions back (tests that installed the handlers in a shared process).
void uninstall_stop_signal_handlers();
// The first stop signal received since start (or the last clear), 0 if none.
int pending_stop_signal();
void clear_stop_signal();
// "SIGUSR1", "SIGTERM", "SIGINT", else "signal <n>".
std::string signal_name(int signo);

class Heartbeat {
 public:
  Heartbeat() = default;                // disabled
  explicit Heartbeat(std::string path);  // "" = disabled
  // Creates the file if needed and sets its mtime to now. Never throws (a heartbeat that cannot
  // be written shows up as a stale heartbeat, which is the launcher's business).
  void beat() const;
  bool enabled() const { return !path_.empty(); }

 private:
  std::string path_;
};

}  // namespace mtrain::trainer

#pragma once
// The supervisor: starts every rank of a plan, relays their output, forwards signals, tears the
// group down when one fails (SIGTERM, then SIGKILL after the grace period), restarts the whole
// group up to max_restarts times, and reports the root cause.
//
// It runs one Boost.Asio event loop: SIGCHLD wakes it to reap (no polling), rank pipes are read
// asynchronously, and the grace period is a timer.
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "lib/launch/output.hpp"
#include "lib/launch/process.hpp"
#include "lib/launch/restart_backoff.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::launch {

// Something outside the ranks ended the attempt: the job failed on another node, the launcher's
// ssh connection closed. Every rank is stopped; the launcher exits with exit_code.
struct ExternalStop {
  std::string reason;
  int exit_code = 1;
  // Non-zero (SIGUSR1): a notice instead of a teardown: the ranks get this signal and wind
  // down on their own (the bundled trainer saves first), torn down only after notice_grace.
  int notice_signal = 0;
};

// A watcher outside the ranks (a node's rendezvous heartbeats, its ssh stdin): started on the
// supervisor's event loop once the ranks run, told when a rank fails on its own, finished
// before the attempt ends. finish() must drop every I/O object it created on `io` (their
// aborted handlers then run while the watcher is still alive).
class AttemptWatcher {
 public:
  virtual ~AttemptWatcher() = default;
  virtual void start(boost::asio::io_context& io, std::function<void(ExternalStop)> stop) = 0;
  virtual void rank_failed(const std::string& /*what*/) {}
  virtual void finish() = 0;
};

struct SuperviseOptions {
  std::chrono::milliseconds grace_period{5000};
  // After a USR1/USR2 notice was forwarded, how long the remaining ranks may take to end on their
  // own (e.g. to save a checkpoint) once the first one has ended.
  std::chrono::milliseconds notice_grace{120000};
  std::string error_file_dir;               // TORCHELASTIC_ERROR_FILE root
  bool error_files_removed = false;         // error_file_dir is the launcher's temporary folder, gone when it exits
  OutputOptions output;
  std::map<std::string, std::string> base_env;  // inherited environment; plan env overrides it
  std::string program_path;                 // resolved argv[0] for every worker
  double heartbeat_timeout_s = 0;           // --heartbeat-timeout: 0 = the default watch below
  // Without --heartbeat-timeout: a rank that beats is watched adaptively (AdaptiveWatch in
  // progress_watch.hpp) with this floor; 0 = off.
  std::chrono::milliseconds default_heartbeat_floor{20000};
  // A rank stopped (SIGSTOP/SIGTSTP) this long is the root cause: its peers wait for it in a
  // collective until their comm timeout (300 s), then the first of them to give up would be
  // blamed. 0 = never.
  std::chrono::milliseconds stopped_timeout{10000};
  RestartBackoff backoff;                   // the pause before each restart
  std::vector<AttemptWatcher*> watchers;
  // The first attempt's number (TORCHELASTIC_RESTART_COUNT, attempt_<k> folders): a node agent
  // passes the job's restart count from the rendezvous store, so every node agrees.
  int first_attempt = 0;
};

// Returns the launcher's exit code: 0 when every rank succeeded, else the root-cause rank's
// code (128+signal for signals), or 128+signal when the launcher itself was told to stop,
// kExitStalled when a rank made no progress for --heartbeat-timeout, or an ExternalStop's code.
int supervise(const plan::LaunchPlan& plan, ProcessRunner& runner, const SuperviseOptions& opt);

}  // namespace mtrain::launch

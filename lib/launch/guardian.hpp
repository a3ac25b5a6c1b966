#pragma once
// Guardian: a small process that kills every rank's process group when the launcher dies, even
// by SIGKILL. PR_SET_PDEATHSIG only reaches the ranks themselves; what a rank forked (a data
// loader, a shell pipeline) is re-parented to init and would survive. The guardian outlives the
// launcher just long enough to kill those groups.
//
// Protocol (one socketpair(AF_UNIX, SOCK_SEQPACKET), so each record arrives whole and in order):
// * The launcher end is held by the launcher only (close-on-exec: a rank has it between fork and
//   exec, never after). The guardian holds the other end and nothing else (it closes every
//   inherited fd, its stdio goes to /dev/null).
// * Fixed-size records "watch pgid" and "forget pgid". A rank sends its own "watch" between fork
//   and exec, right after setpgid, so nothing the rank can fork escapes a launcher killed during
//   the spawn; the launcher repeats it after the spawn (idempotent) to find out whether the
//   guardian is still there. "forget" is sent only after the rank has been reaped, and the
//   launcher never signals a group after that.
// * Why forget only after reaping: while the group leader is a zombie, or any member of the group
//   lives, the kernel keeps the number in use, so kill(-pgid) reaches this job's processes and no
//   one else's. Once the group is empty the number may be reused by an unrelated process group;
//   a "forget" sent earlier would be safe but lose the protection, one sent later (or never)
//   could kill a stranger. Forgetting right after waitpid leaves a window of microseconds, and a
//   reuse needs the pid counter to wrap in that time.
// * End of file on the guardian's end means the launcher is gone (the kernel closes its fds
//   whatever killed it) or released the guardian: it sends SIGKILL to every group still watched
//   and exits (status kExitKilledGroups), or just exits (status 0) when none is. The guardian
//   thus cannot be left behind: it lives exactly as long as the launcher end stays open.
// * It runs in its own process group and ignores SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1,
//   SIGUSR2 and SIGPIPE: a Ctrl-C or a `kill -TERM`/`kill -KILL` of the launcher's process group
//   leaves it alive to do its job after the launcher's own teardown. Its name is "mtrain-guard".
// * It is started by fork only (no exec): the launcher is multi-threaded, so the child uses
//   async-signal-safe calls only, and a fixed table (kCapacity groups) instead of allocation.
// A process that leaves its group (setsid, setpgid) escapes it, as it escapes the launcher's own
// teardown: only a cgroup could follow it.
#include <sys/types.h>

#include "lib/core/unique_fd.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <set>
#include <string>

namespace mtrain::launch {

class Guardian {
 public:
  static constexpr std::size_t kCapacity = 4096;  // groups watched at once
  static constexpr int kExitKilledGroups = 1;     // exit status after killing watched groups

  Guardian() = default;
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  // Releases the guardian (as close() with a 2 s bound): groups still watched are killed.
  ~Guardian();

  // Forks the guardian unless it is running. Throws mtrain::Error if it cannot.
  void start();
  // A folder (absolute path) the guardian removes (rm -rf) when its launcher end closes: the
  // launcher's private run folder, left behind by a launcher killed with SIGKILL (issue 17,
  // item 14). Removing a folder that the launcher already removed is a no-op. Takes effect at the
  // next start() (a guardian, once forked, keeps the folder it was given).
  void remove_on_exit(const std::string& folder);
  bool running() const { return fd_.valid(); }
  pid_t pid() const { return pid_; }
  // The launcher end (close-on-exec), for a rank's pre-exec "watch"; -1 when not running.
  int fd() const { return fd_.get(); }

  // Watch / forget a process group. watch() starts the guardian if none runs; a guardian found
  // dead (someone killed it) is replaced by a new one that gets every watched group again.
  // False if the record could not be delivered (a warning was printed).
  bool watch(pid_t pgid);
  bool forget(pid_t pgid);
  const std::set<pid_t>& watched() const { return watched_; }

  // Closes the launcher end, exactly as the launcher's death would, and waits up to `timeout`
  // for the guardian to exit. Its wait status, or nullopt if it did not exit in time (it is
  // left to finish on its own) or none was running.
  std::optional<int> close(std::chrono::milliseconds timeout);

  // For a forked child before exec (async-signal-safe): record the caller's own process group.
  // Errors are ignored; the launcher repeats the record after the spawn.
  static void watch_self(int fd) noexcept;
  static void forget_self(int fd) noexcept;

 private:
  bool send(int op, pid_t pgid);
  bool restart();
  bool after_failed_send();
  UniqueFd fd_;
  pid_t pid_ = -1;
  std::set<pid_t> watched_;
  bool warned_gone_ = false;
  bool warned_full_ = false;
  std::string remove_on_exit_;
};

}  // namespace mtrain::launch

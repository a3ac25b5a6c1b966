#pragma once
// The one way mtrain runs a short-lived program and waits for its answer (issue 41 item 2, issue 40
// item 4): the estimate probe (`mtrain-worker estimate-probe`), and the reports' and Slurm's
// client commands. Ranks are not run here: they live as long as the job, under the launcher's own
// supervision (Boost.Process, launch/).
//
// * No shell: argv goes to execvp as it is, so nothing in an argument is interpreted, and no
//   temporary file at a guessable path: stdout and stderr come back through pipes (a fixed
//   "$TMPDIR/…-<pid>.err" was followed through a planted symbolic link and its target filled).
// * Nothing is allocated between fork and exec (the parent may have threads; a malloc lock held
//   by another thread at the fork would hang the child): argv and envp are built before the fork.
// * One deadline policy: at `deadline` the child's process group gets SIGTERM, `grace` later
//   SIGKILL, so a program that ignores SIGTERM still ends, and so do its own children.
// * Bounded memory: at most `max_stdout` bytes of stdout (the head: it is the answer, and an
//   answer that does not fit is reported as truncated) and `max_stderr` of stderr (the tail: the
//   error is at the end) are kept; the rest is read and dropped, so a child that writes without
//   end neither blocks on a full pipe nor grows the caller.
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace mtrain {

struct ChildOptions {
  std::chrono::milliseconds deadline{10000};
  std::chrono::milliseconds grace{2000};
  size_t max_stdout = 16u << 20;
  size_t max_stderr = 64u << 10;
  bool merge_stderr = false;           // stderr into the stdout pipe (one stream, in order)
  bool replace_environment = false;    // true: the child's environment is exactly `environment`
  std::vector<std::string> environment;  // "NAME=value" entries, when replace_environment
  // Where stdout goes instead of the pipe: a descriptor the caller opened (-1: the pipe). The
  // child gets a copy; the caller keeps and closes its own.
  int stdout_fd = -1;
};

struct ChildResult {
  bool started = false;     // false: argv[0] could not be executed (exec_error says why)
  std::string exec_error;   // strerror of the failed pipe, fork or exec
  int exit_code = -1;       // the program's exit code; 128+N when signal N ended it
  bool timed_out = false;   // the deadline passed (SIGTERM sent)
  bool killed = false;      // SIGKILL was needed after the grace period
  std::string out, err;
  bool out_truncated = false;  // stdout was longer than max_stdout (its head is kept)
  bool err_truncated = false;  // stderr was longer than max_stderr (its tail is kept)
};

// Runs argv[0] (looked up in PATH unless it contains '/') with stdin on /dev/null, in a process
// group of its own, and waits for it under the options' deadline. Never throws for what the child
// does; an empty argv is a result that did not start.
ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& options = {});

}  // namespace mtrain

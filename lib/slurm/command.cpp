#include "lib/slurm/command.hpp"

#include <chrono>

#include "lib/core/child_process.hpp"

namespace mtrain::slurm {

// On core's one child-process facility (core/child_process.hpp): the client command's process
// group gets SIGTERM at the timeout and SIGKILL 2 s later (Slurm's clients end at SIGTERM).
CommandResult SystemRunner::run(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  if (argv.empty()) {
    r.not_found = true;
    r.errno_text = "empty command";
    return r;
  }
  ChildOptions co;
  co.deadline = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  co.grace = std::chrono::seconds(2);
  co.max_stdout = 64u << 20;  // squeue/sacct of a large cluster: megabytes
  co.max_stderr = 1u << 20;
  const ChildResult c = run_child(argv, co);
  r.not_found = !c.started;
  r.errno_text = c.exec_error;
  r.timed_out = c.timed_out;
  r.exit_code = c.exit_code;
  r.out = c.out;
  r.err = c.err;
  return r;
}

}  // namespace mtrain::slurm

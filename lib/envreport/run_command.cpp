#include "lib/envreport/run_command.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "lib/core/child_process.hpp"

namespace mtrain::envreport {

// On core's one child-process facility (core/child_process.hpp: no shell, pipes, SIGTERM at the
// deadline and SIGKILL 2 s later, nothing allocated after fork); this adds the report's result
// shape and the stdout file.
CommandResult run_command(const std::vector<std::string>& argv, const RunOptions& opt) {
  CommandResult r;
  if (argv.empty()) return r;
  ChildOptions co;
  co.deadline = std::chrono::milliseconds(opt.timeout_ms);
  co.grace = std::chrono::seconds(2);
  // A benchmark cell's `mtrain launch` prints a line per step: far below this.
  co.max_stdout = 64u << 20;
  co.max_stderr = 4u << 20;
  co.merge_stderr = opt.merge_stderr;
  if (opt.env) {
    co.replace_environment = true;
    for (const auto& [k, v] : *opt.env) co.environment.push_back(k + "=" + v);
  }
  UniqueFd file;
  if (!opt.stdout_file.empty()) {
    file.reset(::open(opt.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOCTTY, 0644));
    if (!file) {
      r.err = std::strerror(errno);
      return r;
    }
    co.stdout_fd = file.get();
  }
  const ChildResult c = run_child(argv, co);
  file.reset();
  r.started = c.started;
  r.out = c.out;
  r.err = c.started ? c.err : c.exec_error;
  r.rc = c.timed_out ? 124 : c.exit_code;
  return r;
}

}  // namespace mtrain::envreport

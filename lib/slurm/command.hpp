#pragma once
// Running Slurm's client commands (sbatch, squeue, sacct, scontrol, scancel): argv in, exit code
// and both outputs back, always under a timeout. An interface so the client logic is tested with
// an in-memory fake and the real commands only in the end-to-end tests.
#include <functional>
#include <string>
#include <vector>

namespace mtrain::slurm {

struct CommandResult {
  int exit_code = -1;       // the program's exit code; 128+N when killed by signal N
  bool not_found = false;   // the program could not be started (errno_text says why)
  bool timed_out = false;   // killed after the timeout
  std::string out, err, errno_text;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  virtual CommandResult run(const std::vector<std::string>& argv, double timeout_s) = 0;
};

// core/child_process.hpp: no shell, pipes; the child gets its own process group, which gets
// SIGTERM at the timeout and SIGKILL 2 s later.
class SystemRunner : public CommandRunner {
 public:
  CommandResult run(const std::vector<std::string>& argv, double timeout_s) override;
};

// Test double: answers from a function of argv and records every call.
class FakeRunner : public CommandRunner {
 public:
  using Handler = std::function<CommandResult(const std::vector<std::string>&)>;
  explicit FakeRunner(Handler h) : handler_(std::move(h)) {}
  CommandResult run(const std::vector<std::string>& argv, double) override {
    calls.push_back(argv);
    return handler_(argv);
  }
  std::vector<std::vector<std::string>> calls;

 private:
  Handler handler_;
};

}  // namespace mtrain::slurm

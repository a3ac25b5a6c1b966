#pragma once
// How a rank ended, in words and as the launcher's exit code.
#include <string>

namespace mtrain::launch {

struct ExitStatus {
  bool signaled = false;
  int code = 0;    // exit code, or the signal number when signaled
  bool oom = false;  // the kernel's OOM killer is known to have fired meanwhile

  bool ok() const { return !signaled && code == 0; }
  int launcher_code() const { return signaled ? 128 + code : code; }
  std::string describe() const;  // "exit code 3", "signal SIGKILL (9), killed by the kernel's OOM killer"
};

ExitStatus from_wait_status(int status);
std::string signal_name(int sig);

// OOM kills counted by the kernel for this process's cgroup (cgroup v2 memory.events), or -1
// where the kernel does not say.
long oom_kill_count();

}  // namespace mtrain::launch

#include "lib/launch/exit_status.hpp"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

namespace mtrain::launch {

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : fmt::format("signal {}", sig);
}

ExitStatus from_wait_status(int status) {
  ExitStatus s;
  if (WIFSIGNALED(status)) {
    s.signaled = true;
    s.code = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    s.code = WEXITSTATUS(status);
  }
  return s;
}

std::string ExitStatus::describe() const {
  if (!signaled) return fmt::format("exit code {}", code);
  std::string out = fmt::format("signal {} ({})", signal_name(code), code);
  if (oom) out += ", killed by the kernel's OOM killer";
  return out;
}

long oom_kill_count() {
  std::ifstream cg("/proc/self/cgroup");
  std::string line, path;
  while (std::getline(cg, line))
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return -1;
  std::ifstream events("/sys/fs/cgroup" + path + "/memory.events");
  std::string key;
  long value;
  while (events >> key >> value)
    if (key == "oom_kill") return value;
  return -1;
}

}  // namespace mtrain::launch

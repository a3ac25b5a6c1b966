#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>

#include <boost/process.hpp>
#include <boost/process/extend.hpp>
#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/launch/guardian.hpp"
#include "lib/launch/launcher_signals.hpp"
#include "lib/launch/process.hpp"

namespace bp = boost::process;

namespace mtrain::launch {

namespace {

// Runs in the child between fork and exec: async-signal-safe calls only.
struct RankSetup {
  pid_t launcher;
  int guard_fd;  // the guardian's launcher end (close-on-exec), or -1
  template <class Executor>
  void operator()(Executor&) const {
    // Its own process group: a terminal's Ctrl-C reaches only the launcher, which forwards it,
    // and teardown can signal everything a rank started.
    setpgid(0, 0);
    // Die with the launcher, even if it is SIGKILLed. If it already died between fork and
    // prctl, the signal would never come: exit now instead.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    // The guardian kills this group if the launcher dies: watched from before the exec, so
    // nothing the program forks can slip through.
    Guardian::watch_self(guard_fd);
    // Undo the launcher's signal handling: children start with default dispositions (handled
    // signals are reset by exec, ignored ones — SIGPIPE, USR1, USR2 — would stay ignored).
    child_default_signals();
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
  }
};

// Also in the child: the exec failed, the child exits and its group with it.
struct ExecFailed {
  int guard_fd;
  template <class Executor>
  void operator()(Executor&, const std::error_code&) const {
    Guardian::forget_self(guard_fd);
  }
};

}  // namespace

PosixProcessRunner::PosixProcessRunner() : guardian_(std::make_unique<Guardian>()) {}

PosixProcessRunner::~PosixProcessRunner() = default;

Spawned PosixProcessRunner::spawn(const SpawnRequest& req) {
  if (!guardian_->running()) {
    try {
      guardian_->start();
    } catch (const Error& e) {
      std::fprintf(stderr, "mtrain: warning: %s; processes started by ranks may outlive a killed launcher\n",
                   e.what());
    }
  }
  bp::environment env;
  for (const auto& [k, v] : req.env) env[k] = v;
  bp::pipe out, err, in;
  RankSetup setup{getpid(), guardian_->fd()};
  ExecFailed failed{guardian_->fd()};
  std::vector<std::string> args(req.argv.begin() + 1, req.argv.end());
  try {
    auto start = [&](auto&& stdin_spec) {
      return bp::child(bp::exe = req.argv.at(0), bp::args = args, env, bp::std_out > out, bp::std_err > err,
                       stdin_spec, bp::extend::on_exec_setup = setup, bp::extend::on_exec_error = failed);
    };
    bp::child child = req.stdin_pipe ? start(bp::std_in < in) : start(bp::std_in < bp::null);
    Spawned s;
    if (req.stdin_pipe) {
      s.stdin_fd.reset(fcntl(in.native_sink(), F_DUPFD_CLOEXEC, 0));
    }
    s.pid = child.id();
    child.detach();  // the supervisor reaps through SIGCHLD + waitpid
    // Again from here (the child's record may have met a guardian that was killed since: this
    // one notices and starts another).
    if (guardian_->running() && getpgid(s.pid) == s.pid) guardian_->watch(s.pid);
    s.stdout_fd.reset(fcntl(out.native_source(), F_DUPFD_CLOEXEC, 0));
    s.stderr_fd.reset(fcntl(err.native_source(), F_DUPFD_CLOEXEC, 0));
    return s;
  } catch (const bp::process_error& e) {
    throw UsageError(fmt::format("could not start '{}': {}", req.argv.at(0), e.code().message()),
                     "Check that the program exists and is executable.");
  }
}

void PosixProcessRunner::signal(pid_t pid, int sig) {
  if (pid <= 0) return;
  // The group may be gone already (ESRCH) or the child may not have called setpgid yet.
  if (killpg(pid, sig) != 0) kill(pid, sig);
}

std::vector<Reaped> PosixProcessRunner::reap(const std::vector<pid_t>& pids) {
  std::vector<Reaped> out;
  for (pid_t pid : pids) {
    // Exited? Look without reaping: while the zombie is there the group's number is this job's,
    // so what the rank left in its group (a background helper, a data loader) can be killed
    // safely now, and is — it must not outlive its rank (issue 17, item 12). A process that
    // left the group (setsid) escapes; see docs/reliability.md.
    siginfo_t info;
    std::memset(&info, 0, sizeof info);
    if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid != pid) continue;
    killpg(pid, SIGKILL);
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      // Reaped, and the supervisor signals no reaped rank: the number is free for reuse now,
      // so the guardian must stop watching it.
      guardian_->forget(pid);
      out.push_back({pid, status});
    }
  }
  return out;
}

bool PosixProcessRunner::stopped(pid_t pid) {
  // /proc/<pid>/stat: "pid (comm) S …"; comm may hold spaces and parentheses: the state
  // follows the last ')'.
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] == 'T';
}

void PosixProcessRunner::remove_on_launcher_death(const std::string& folder) {
  guardian_->remove_on_exit(folder);
  guardian_->start();
}

}  // namespace mtrain::launch

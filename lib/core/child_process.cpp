#include "lib/core/child_process.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace mtrain {

namespace {

using ChildClock = std::chrono::steady_clock;

struct ChildPipe {
  UniqueFd read, write;
  bool open() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return false;
    read.reset(p[0]);
    write.reset(p[1]);
    return true;
  }
};

// What the child needs, every byte allocated before the fork.
struct ExecPlan {
  std::vector<char*> argv, envp;
  int stdin_fd, stdout_fd, stderr_fd, status_fd;
  bool replace_env;
};

// The child: async-signal-safe calls only, then exec; an exec failure's errno goes back through
// the close-on-exec status pipe (a successful exec closes it with nothing written).
[[noreturn]] void exec_child(const ExecPlan& p) {
  ::setpgid(0, 0);
  // The launcher blocks signals it reads through signalfd and may ignore SIGPIPE; a mask and
  // ignored dispositions survive exec, and a child with SIGTERM blocked would only die at SIGKILL.
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  ::dup2(p.stdin_fd, STDIN_FILENO);
  ::dup2(p.stdout_fd, STDOUT_FILENO);
  ::dup2(p.stderr_fd, STDERR_FILENO);
  if (p.replace_env)
    ::execvpe(p.argv[0], p.argv.data(), p.envp.data());
  else
    ::execvp(p.argv[0], p.argv.data());
  const int e = errno;
  (void)!::write(p.status_fd, &e, sizeof e);
  ::_exit(127);
}

// The deadline policy: SIGTERM to the group at the deadline, SIGKILL `grace` later.
class ChildDeadline {
 public:
  ChildDeadline(pid_t pid, const ChildOptions& o)
      : pid_(pid), term_at_(ChildClock::now() + o.deadline), grace_(o.grace) {}

  // Sends what is due now; true once SIGKILL was sent.
  bool check(ChildResult& r) {
    const auto now = ChildClock::now();
    if (!r.timed_out && now >= term_at_) {
      r.timed_out = true;
      ::kill(-pid_, SIGTERM);
      kill_at_ = now + grace_;
    }
    if (r.timed_out && !r.killed && now >= kill_at_) {
      r.killed = true;
      ::kill(-pid_, SIGKILL);
    }
    return r.killed;
  }
  // How long to wait before the next check is due.
  int wait_ms() const {
    const auto until = kill_at_ != ChildClock::time_point::max() ? kill_at_ : term_at_;
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - ChildClock::now()).count();
    return static_cast<int>(std::clamp<long long>(ms + 1, 1, 1000));
  }

 private:
  pid_t pid_;
  ChildClock::time_point term_at_;
  ChildClock::time_point kill_at_ = ChildClock::time_point::max();
  std::chrono::milliseconds grace_;
};

// Keeps the head of stdout and the tail of stderr within their caps.
void keep(ChildResult& r, bool is_out, const char* data, size_t n, const ChildOptions& o) {
  if (is_out) {
    const size_t room = o.max_stdout - std::min(o.max_stdout, r.out.size());
    r.out.append(data, std::min(n, room));
    r.out_truncated = r.out_truncated || n > room;
    return;
  }
  r.err.append(data, n);
  // Trimmed once it is twice the cap: each byte is moved at most once on average.
  if (r.err.size() > 2 * o.max_stderr) {
    r.err.erase(0, r.err.size() - o.max_stderr);
    r.err_truncated = true;
  }
}

// Reads the pipes until both are closed or SIGKILL was sent.
void read_output(UniqueFd& out, UniqueFd& err, ChildDeadline& deadline, ChildResult& r, const ChildOptions& o) {
  char buf[65536];
  while (out.get() >= 0 || err.get() >= 0) {
    if (deadline.check(r)) return;
    pollfd p[2];
    UniqueFd* which[2];
    int n = 0;
    for (UniqueFd* f : {&out, &err}) {
      if (f->get() < 0) continue;
      p[n] = {f->get(), POLLIN, 0};
      which[n++] = f;
    }
    const int rc = ::poll(p, static_cast<nfds_t>(n), deadline.wait_ms());
    if (rc < 0 && errno != EINTR) return;
    for (int k = 0; k < n && rc > 0; ++k) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(p[k].fd, buf, sizeof buf);
      if (got > 0)
        keep(r, which[k] == &out, buf, static_cast<size_t>(got), o);
      else if (got == 0 || errno != EINTR)
        which[k]->reset();
    }
  }
}

// Closed pipes do not mean the program ended (it may close them and go on): wait under the same
// deadline. 128+N when signal N ended it.
int reap(pid_t pid, ChildDeadline& deadline, ChildResult& r) {
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, r.killed ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return -1;
    if (w == 0) {
      deadline.check(r);
      ::usleep(2000);
    }
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

ChildResult run_child(const std::vector<std::string>& argv, const ChildOptions& o) {
  ChildResult r;
  if (argv.empty()) {
    r.exec_error = "empty command";
    return r;
  }
  ChildPipe out, err, status;
  UniqueFd devnull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!out.open() || !err.open() || !status.open() || devnull.get() < 0) {
    r.exec_error = std::strerror(errno);
    return r;
  }
  ExecPlan plan;
  for (const auto& a : argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const auto& e : o.environment) plan.envp.push_back(const_cast<char*>(e.c_str()));
  plan.envp.push_back(nullptr);
  plan.replace_env = o.replace_environment;
  plan.stdin_fd = devnull.get();
  plan.stdout_fd = o.stdout_fd >= 0 ? o.stdout_fd : out.write.get();
  plan.stderr_fd = o.merge_stderr ? plan.stdout_fd : err.write.get();
  plan.status_fd = status.write.get();
  const pid_t pid = ::fork();
  if (pid == 0) exec_child(plan);
  if (pid < 0) {
    r.exec_error = std::strerror(errno);
    return r;
  }
  // Also from this side, so that a kill(-pid) before the child ran its setpgid reaches it.
  ::setpgid(pid, pid);
  out.write.reset();
  err.write.reset();
  status.write.reset();
  int exec_errno = 0;
  ssize_t got;
  do got = ::read(status.read.get(), &exec_errno, sizeof exec_errno);
  while (got < 0 && errno == EINTR);
  r.started = got != static_cast<ssize_t>(sizeof exec_errno);
  if (!r.started) r.exec_error = std::strerror(exec_errno);
  ChildDeadline deadline(pid, o);
  read_output(out.read, err.read, deadline, r, o);
  out.read.reset();
  err.read.reset();
  r.exit_code = reap(pid, deadline, r);
  if (r.err.size() > o.max_stderr) r.err.erase(0, r.err.size() - o.max_stderr);
  return r;
}

}  // namespace mtrain

#include "mtrain/envreport/run_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

namespace mtrain::envreport {

namespace {

using Clock = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Child side: never returns. Reports an exec failure through `errpipe` (close-on-exec, so a
// successful exec closes it with nothing written).
[[noreturn]] void exec_child(const std::vector<std::string>& argv, const RunOptions& opt, int out_w,
                             int err_w, int errpipe) {
  ::setpgid(0, 0);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
  if (!opt.stdout_file.empty()) {
    int f = ::open(opt.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (f < 0) {
      int e = errno;
      (void)!::write(errpipe, &e, sizeof e);
      ::_exit(127);
    }
    ::dup2(f, STDOUT_FILENO);
  } else {
    ::dup2(out_w, STDOUT_FILENO);
  }
  ::dup2(opt.merge_stderr ? STDOUT_FILENO : err_w, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  if (opt.env) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : *opt.env) kv.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& s : kv) envp.push_back(s.data());
    envp.push_back(nullptr);
    ::execvpe(args[0], args.data(), envp.data());
  } else {
    ::execvp(args[0], args.data());
  }
  int e = errno;
  (void)!::write(errpipe, &e, sizeof e);
  ::_exit(127);
}

// The deadline's escalation: SIGTERM to the child's process group once it passes, SIGKILL 2 s
// later (and again at every later check, until the child is reaped).
class Deadline {
 public:
  Deadline(pid_t pid, int timeout_ms) : pid_(pid), deadline_(Clock::now() + std::chrono::milliseconds(timeout_ms)) {}

  // Sends what is due at `now`; true when SIGKILL was sent.
  bool check(Clock::time_point now) {
    if (!timed_out_ && now >= deadline_) {
      timed_out_ = true;
      ::kill(-pid_, SIGTERM);
      kill_at_ = now + std::chrono::seconds(2);
    }
    if (timed_out_ && now >= kill_at_) {
      ::kill(-pid_, SIGKILL);
      return true;
    }
    return false;
  }
  // How long a wait for output may last before the next check.
  int wait_ms(Clock::time_point now) const {
    auto until = timed_out_ ? kill_at_ : deadline_;
    return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()) + 1;
  }
  bool timed_out() const { return timed_out_; }

 private:
  pid_t pid_;
  Clock::time_point deadline_;
  Clock::time_point kill_at_ = Clock::time_point::max();
  bool timed_out_ = false;
};

// A started child: its pid and the read ends of its stdout and stderr pipes.
struct Child {
  pid_t pid = -1;
  int out = -1, err = -1;
  bool started = false;  // exec succeeded; else exec_errno says why not
  int exec_errno = 0;
};

// Forks the child and learns whether its exec succeeded. Nothing when a pipe or the fork fails.
std::optional<Child> start_child(const std::vector<std::string>& argv, const RunOptions& opt) {
  int out[2], err[2], ep[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return std::nullopt;
  }
  if (::pipe2(ep, O_CLOEXEC) != 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    return std::nullopt;
  }
  pid_t pid = ::fork();
  if (pid == 0) exec_child(argv, opt, out[1], err[1], ep[1]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(ep[1]);
  if (pid < 0) {
    for (int fd : {out[0], err[0], ep[0]}) ::close(fd);
    return std::nullopt;
  }
  Child c;
  c.pid = pid;
  c.out = out[0];
  c.err = err[0];
  ssize_t got = ::read(ep[0], &c.exec_errno, sizeof c.exec_errno);  // EOF once exec succeeded
  ::close(ep[0]);
  c.started = got != static_cast<ssize_t>(sizeof c.exec_errno);
  return c;
}

// Reads both pipes into `r` until the child closes them or SIGKILL was sent at the deadline;
// closes them.
void capture_output(Child& c, Deadline& deadline, CommandResult& r) {
  int fds[2] = {c.out, c.err};
  char buf[65536];
  while (fds[0] >= 0 || fds[1] >= 0) {
    auto now = Clock::now();
    if (deadline.check(now)) break;
    int wait_ms = deadline.wait_ms(now);
    pollfd p[2];
    int n = 0;
    int which[2];
    for (int i = 0; i < 2; ++i)
      if (fds[i] >= 0) {
        p[n] = {fds[i], POLLIN, 0};
        which[n++] = i;
      }
    int rc = ::poll(p, n, wait_ms);
    if (rc < 0 && errno != EINTR) break;
    for (int k = 0; k < n && rc > 0; ++k) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t m = ::read(p[k].fd, buf, sizeof buf);
      if (m > 0) {
        (which[k] == 0 ? r.out : r.err).append(buf, static_cast<size_t>(m));
      } else if (m == 0 || errno != EINTR) {
        close_fd(fds[which[k]]);
      }
    }
  }
  close_fd(fds[0]);
  close_fd(fds[1]);
  c.out = c.err = -1;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const RunOptions& opt) {
  CommandResult r;
  if (argv.empty()) return r;
  std::optional<Child> child = start_child(argv, opt);
  if (!child) return r;
  r.started = child->started;
  Deadline deadline(child->pid, opt.timeout_ms);
  capture_output(*child, deadline, r);
  // The pipes are closed (or the child sends its output to a file): wait for it, still bounded
  // by the deadline.
  int status = 0;
  while (::waitpid(child->pid, &status, WNOHANG) != child->pid) {
    deadline.check(Clock::now());
    ::usleep(2000);
  }
  if (deadline.timed_out()) {
    r.rc = 124;
  } else if (WIFEXITED(status)) {
    r.rc = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.rc = 128 + WTERMSIG(status);
  }
  if (!r.started) r.err = std::strerror(child->exec_errno);
  return r;
}

}  // namespace mtrain::envreport

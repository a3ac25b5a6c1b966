#include "mtrain/envreport/run_command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

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

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, const RunOptions& opt) {
  CommandResult r;
  if (argv.empty()) return r;
  int out[2], err[2], ep[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return r;
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return r;
  }
  if (::pipe2(ep, O_CLOEXEC) != 0) {
    for (int fd : {out[0], out[1], err[0], err[1]}) ::close(fd);
    return r;
  }
  pid_t pid = ::fork();
  if (pid == 0) exec_child(argv, opt, out[1], err[1], ep[1]);
  ::close(out[1]);
  ::close(err[1]);
  ::close(ep[1]);
  if (pid < 0) {
    for (int fd : {out[0], err[0], ep[0]}) ::close(fd);
    return r;
  }
  int exec_errno = 0;
  ssize_t got = ::read(ep[0], &exec_errno, sizeof exec_errno);  // EOF once exec succeeded
  ::close(ep[0]);
  r.started = got != static_cast<ssize_t>(sizeof exec_errno);

  int fds[2] = {out[0], err[0]};
  const auto deadline = Clock::now() + std::chrono::milliseconds(opt.timeout_ms);
  bool timed_out = false;
  auto kill_at = Clock::time_point::max();
  char buf[65536];
  while (fds[0] >= 0 || fds[1] >= 0) {
    auto now = Clock::now();
    if (!timed_out && now >= deadline) {
      timed_out = true;
      ::kill(-pid, SIGTERM);
      kill_at = now + std::chrono::seconds(2);
    }
    if (timed_out && now >= kill_at) {
      ::kill(-pid, SIGKILL);
      break;
    }
    auto until = timed_out ? kill_at : deadline;
    int wait_ms = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()) + 1;
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
  // The pipes are closed (or the child sends its output to a file): wait for it, still bounded
  // by the deadline.
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) != pid) {
    auto now = Clock::now();
    if (!timed_out && now >= deadline) {
      timed_out = true;
      ::kill(-pid, SIGTERM);
      kill_at = now + std::chrono::seconds(2);
    }
    if (timed_out && now >= kill_at) ::kill(-pid, SIGKILL);
    ::usleep(2000);
  }
  if (timed_out) {
    r.rc = 124;
  } else if (WIFEXITED(status)) {
    r.rc = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.rc = 128 + WTERMSIG(status);
  }
  if (!r.started) r.err = std::strerror(exec_errno);
  return r;
}

}  // namespace mtrain::envreport

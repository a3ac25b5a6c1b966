#include "mtrain/slurm/command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace mtrain::slurm {

namespace {

using Clock = std::chrono::steady_clock;

void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Child side: never returns. An exec failure is reported through `status_w` (close-on-exec, so a
// successful exec closes it with nothing written). `cargv` is built before the fork: the child of
// a threaded parent must not allocate.
[[noreturn]] void exec_child(std::vector<char*>& cargv, int out_w, int err_w, int status_w) {
  ::setpgid(0, 0);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  ::dup2(out_w, 1);
  ::dup2(err_w, 2);
  ::execvp(cargv[0], cargv.data());
  int e = errno;
  (void)!::write(status_w, &e, sizeof e);
  ::_exit(127);
}

// Forks the child with its stdout and stderr on pipes (their read ends in `out`, `err`); -1 when
// it could not, with r.not_found and r.errno_text set. An exec failure also sets them, but the
// child still has to be reaped.
pid_t start_child(const std::vector<std::string>& argv, int& out, int& err, CommandResult& r) {
  int o[2], e[2], status_pipe[2];
  if (::pipe2(o, O_CLOEXEC) != 0 || ::pipe2(e, O_CLOEXEC) != 0 || ::pipe2(status_pipe, O_CLOEXEC) != 0) {
    r.not_found = true;
    r.errno_text = std::strerror(errno);
    return -1;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) exec_child(cargv, o[1], e[1], status_pipe[1]);
  close_fd(o[1]);
  close_fd(e[1]);
  close_fd(status_pipe[1]);
  if (pid < 0) {
    r.not_found = true;
    r.errno_text = std::strerror(errno);
    close_fd(o[0]);
    close_fd(e[0]);
    close_fd(status_pipe[0]);
    return -1;
  }
  int exec_errno = 0;
  if (::read(status_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    r.not_found = true;
    r.errno_text = std::strerror(exec_errno);
  }
  close_fd(status_pipe[0]);
  out = o[0];
  err = e[0];
  return pid;
}

// Reads both pipes into r.out and r.err until the child closes them, or kills its process group
// when the deadline passes; closes them.
void capture_output(pid_t pid, int out, int err, Clock::time_point deadline, CommandResult& r) {
  char buf[65536];
  while (out >= 0 || err >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out, POLLIN, 0}, {err, POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int k = 0; k < 2; ++k) {
      int& fd = k == 0 ? out : err;
      if (fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) (k == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR) close_fd(fd);
    }
  }
  close_fd(out);
  close_fd(err);
}

// Both pipes closed does not mean the program ended: wait for it under the same deadline. The
// exit code, or 128+N when signal N ended it.
int reap(pid_t pid, Clock::time_point deadline, CommandResult& r) {
  int status = 0;
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && Clock::now() >= deadline && !r.timed_out) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    if (w == 0) ::usleep(r.timed_out ? 1000 : 5000);
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return r.exit_code;
}

}  // namespace

CommandResult SystemRunner::run(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  if (argv.empty()) {
    r.not_found = true;
    r.errno_text = "empty command";
    return r;
  }
  int out = -1, err = -1;
  const pid_t pid = start_child(argv, out, err, r);
  if (pid < 0) return r;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  capture_output(pid, out, err, deadline, r);
  r.exit_code = reap(pid, deadline, r);
  return r;
}

}  // namespace mtrain::slurm

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
void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}
}  // namespace

CommandResult SystemRunner::run(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  if (argv.empty()) {
    r.not_found = true;
    r.errno_text = "empty command";
    return r;
  }
  int out[2], err[2], status_pipe[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 || ::pipe2(status_pipe, O_CLOEXEC) != 0) {
    r.not_found = true;
    r.errno_text = std::strerror(errno);
    return r;
  }
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    ::execvp(cargv[0], cargv.data());
    int e = errno;
    (void)!::write(status_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  close_fd(out[1]);
  close_fd(err[1]);
  close_fd(status_pipe[1]);
  if (pid < 0) {
    r.not_found = true;
    r.errno_text = std::strerror(errno);
    close_fd(out[0]);
    close_fd(err[0]);
    close_fd(status_pipe[0]);
    return r;
  }
  int exec_errno = 0;
  if (::read(status_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno) {
    r.not_found = true;
    r.errno_text = std::strerror(exec_errno);
  }
  close_fd(status_pipe[0]);

  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  char buf[65536];
  while (out[0] >= 0 || err[0] >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
      break;
    }
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    int n = ::poll(fds, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int k = 0; k < 2; ++k) {
      int& fd = k == 0 ? out[0] : err[0];
      if (fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fd, buf, sizeof buf);
      if (got > 0) (k == 0 ? r.out : r.err).append(buf, static_cast<size_t>(got));
      else if (got == 0 || errno != EINTR) close_fd(fd);
    }
  }
  close_fd(out[0]);
  close_fd(err[0]);
  // Both pipes closed does not mean the program ended: wait for it under the same deadline.
  int status = 0;
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) break;
    if (w == 0 && std::chrono::steady_clock::now() >= deadline && !r.timed_out) {
      r.timed_out = true;
      ::kill(-pid, SIGKILL);
    }
    if (w == 0) ::usleep(r.timed_out ? 1000 : 5000);
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status)) r.exit_code = 128 + WTERMSIG(status);
  return r;
}

}  // namespace mtrain::slurm

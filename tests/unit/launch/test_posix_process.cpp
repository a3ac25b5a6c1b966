// The real ProcessRunner (lib/launch/posix_process.cpp): a child gets exactly the environment it
// is given, its output on pipes and optionally a stdin pipe; signals reach it, a stop is seen,
// and reap returns its wait status once. A program that cannot start is an mtrain::Error.
#include <catch2/catch.hpp>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "lib/core/error.hpp"
#include "lib/launch/process.hpp"

using namespace mtrain::launch;

namespace {

// Everything until EOF (bounded by 10 s), then closes the fd.
std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fd);
  return out;
}

// The wait status of `pid`, reaped within 10 s (-1 if not).
int reap_one(ProcessRunner& r, pid_t pid) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < end) {
    for (const auto& x : r.reap({pid}))
      if (x.pid == pid) return x.status;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return -1;
}

}  // namespace

TEST_CASE("posix_process: output, environment and exit status of a child", "[launch][posix_process]") {
  PosixProcessRunner runner;
  SpawnRequest req;
  req.argv = {"/usr/bin/env"};
  req.env = {{"X", "y z"}, {"MTRAIN_T", "1"}};  // the complete environment: nothing inherited
  Spawned e = runner.spawn(req);
  CHECK(read_all(e.stdout_fd.get()) == "MTRAIN_T=1\nX=y z\n");
  e.stderr_fd.reset();
  CHECK(WIFEXITED(reap_one(runner, e.pid)));

  req.argv = {"/bin/sh", "-c", "echo \"X=$X\"; echo oops >&2; exit 3"};
  Spawned s = runner.spawn(req);
  REQUIRE(s.pid > 0);
  CHECK(s.stdin_fd.get() < 0);
  CHECK(read_all(s.stdout_fd.get()) == "X=y z\n");
  CHECK(read_all(s.stderr_fd.get()) == "oops\n");
  const int st = reap_one(runner, s.pid);
  REQUIRE(WIFEXITED(st));
  CHECK(WEXITSTATUS(st) == 3);
  CHECK(runner.reap({s.pid}).empty());  // returned once
}

TEST_CASE("posix_process: a stdin pipe when asked for, /dev/null otherwise", "[launch][posix_process]") {
  PosixProcessRunner runner;
  SpawnRequest req;
  req.argv = {"/bin/cat"};
  req.stdin_pipe = true;
  Spawned s = runner.spawn(req);
  REQUIRE(s.stdin_fd.get() >= 0);
  REQUIRE(::write(s.stdin_fd.get(), "hello\n", 6) == 6);
  s.stdin_fd.reset();
  CHECK(read_all(s.stdout_fd.get()) == "hello\n");
  s.stderr_fd.reset();
  CHECK(WIFEXITED(reap_one(runner, s.pid)));

  req.stdin_pipe = false;  // cat of /dev/null ends at once
  Spawned n = runner.spawn(req);
  CHECK(read_all(n.stdout_fd.get()).empty());
  n.stderr_fd.reset();
  const int st = reap_one(runner, n.pid);
  CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
}

TEST_CASE("posix_process: signals reach the child, a stop is seen", "[launch][posix_process]") {
  PosixProcessRunner runner;
  SpawnRequest req;
  req.argv = {"/bin/sleep", "30"};
  Spawned s = runner.spawn(req);
  s.stdout_fd.reset();
  s.stderr_fd.reset();
  CHECK_FALSE(runner.stopped(s.pid));
  runner.signal(s.pid, SIGSTOP);
  bool seen = false;
  for (int i = 0; i < 200 && !seen; ++i) {
    seen = runner.stopped(s.pid);
    if (!seen) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK(seen);
  runner.signal(s.pid, SIGCONT);
  runner.signal(s.pid, SIGTERM);
  const int st = reap_one(runner, s.pid);
  REQUIRE(WIFSIGNALED(st));
  CHECK(WTERMSIG(st) == SIGTERM);
}

TEST_CASE("posix_process: a program that cannot start is refused", "[launch][posix_process]") {
  PosixProcessRunner runner;
  SpawnRequest req;
  req.argv = {"/no/such/program"};
  CHECK_THROWS_AS(runner.spawn(req), mtrain::Error);
}

// Signals that never end the launcher by default (lib/launch/launcher_signals.cpp). Each case runs
// in a forked child, so the test process keeps its own dispositions and mask; the child exits
// with the number of the first check that failed (0: all held).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <functional>

#include "lib/launch/launcher_signals.hpp"

using namespace mtrain::launch;

namespace {

// The exit status of `body` run in a child: its return value, or 128 + the signal that ended it.
int in_child(const std::function<int()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(body());
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool ignored(int sig) {
  struct sigaction sa;
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler == SIG_IGN;
}
bool defaulted(int sig) {
  struct sigaction sa;
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler == SIG_DFL;
}
bool blocked(int sig) {
  sigset_t mask;
  pthread_sigmask(SIG_BLOCK, nullptr, &mask);
  return sigismember(&mask, sig) == 1;
}

}  // namespace

TEST_CASE("launcher_signals: stray signals held, notices taken in order, defaults for children",
          "[launch][launcher_signals]") {
  CHECK(in_child([] {
          hold_stray_signals();
          if (!ignored(SIGPIPE)) return 1;
          if (!blocked(SIGUSR1) || !blocked(SIGUSR2)) return 2;
          if (!take_held_notices().empty()) return 3;
          std::raise(SIGUSR2);  // held pending, not acted on
          std::raise(SIGUSR1);
          std::raise(SIGPIPE);  // ignored
          if (take_held_notices() != std::vector<int>{SIGUSR1, SIGUSR2}) return 4;
          if (!take_held_notices().empty()) return 5;  // taken: no longer pending
          release_notice_signals();
          if (blocked(SIGUSR1) || blocked(SIGUSR2)) return 6;
          hold_stray_signals();
          child_default_signals();
          if (!defaulted(SIGPIPE) || !defaulted(SIGUSR1) || !defaulted(SIGUSR2)) return 7;
          if (blocked(SIGUSR1) || blocked(SIGUSR2)) return 8;
          return 0;
        }) == 0);
  // After child_default_signals a notice acts by default again: the child ends by it.
  CHECK(in_child([] {
          hold_stray_signals();
          child_default_signals();
          std::raise(SIGUSR1);
          return 0;
        }) == 128 + SIGUSR1);
}

TEST_CASE("launcher_signals: a notice while the handlers close is discarded, not acted on",
          "[launch][launcher_signals]") {
  CHECK(in_child([] {
          hold_stray_signals();
          release_notice_signals();
          {
            NoticeSignalsClosing closing;
            if (!blocked(SIGUSR1)) return 1;
            std::signal(SIGUSR1, SIG_DFL);  // as Asio leaves it when its signal_set goes
            std::raise(SIGUSR1);            // pending while blocked
          }
          if (!ignored(SIGUSR1) || !ignored(SIGUSR2) || !ignored(SIGPIPE)) return 2;
          if (blocked(SIGUSR1)) return 3;
          std::raise(SIGUSR2);  // ignored from now on
          return 0;
        }) == 0);
}

#include "lib/launch/launcher_signals.hpp"

#include <pthread.h>
#include <signal.h>

#include <cstring>

namespace mtrain::launch {

namespace {

constexpr int kStray[] = {SIGPIPE, SIGUSR1, SIGUSR2};

void set_all(void (*handler)(int)) noexcept {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  for (int s : kStray) sigaction(s, &sa, nullptr);
}

sigset_t notices() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGUSR2);
  return set;
}

}  // namespace

void hold_stray_signals() noexcept {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = SIG_IGN;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGPIPE, &sa, nullptr);
  sigset_t set = notices();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

std::vector<int> take_held_notices() {
  std::vector<int> taken;
  sigset_t pending;
  if (sigpending(&pending) != 0) return taken;
  for (int s : {SIGUSR1, SIGUSR2}) {
    if (!sigismember(&pending, s)) continue;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, s);
    // Pending and blocked: sigtimedwait takes it at once (a zero timeout never waits).
    struct timespec zero = {0, 0};
    if (sigtimedwait(&one, nullptr, &zero) == s) taken.push_back(s);
  }
  return taken;
}

void release_notice_signals() {
  sigset_t set = notices();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

void child_default_signals() noexcept {
  set_all(SIG_DFL);
  sigset_t set = notices();
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
}

NoticeSignalsClosing::NoticeSignalsClosing() {
  sigset_t set = notices();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

NoticeSignalsClosing::~NoticeSignalsClosing() {
  set_all(SIG_IGN);
  sigset_t set = notices();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace mtrain::launch

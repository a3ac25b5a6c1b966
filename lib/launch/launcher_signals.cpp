#include "mtrain/launch/launcher_signals.hpp"

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

void ignore_stray_signals() { set_all(SIG_IGN); }

void child_default_signals() noexcept { set_all(SIG_DFL); }

NoticeSignalsClosing::NoticeSignalsClosing() {
  sigset_t set = notices();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

NoticeSignalsClosing::~NoticeSignalsClosing() {
  ignore_stray_signals();
  sigset_t set = notices();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

}  // namespace mtrain::launch

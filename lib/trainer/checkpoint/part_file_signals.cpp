#include "lib/trainer/checkpoint/part_file_signals.hpp"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace mtrain::trainer {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGXFSZ};
constexpr int kCount = sizeof(kSignals) / sizeof(kSignals[0]);
// The handler may only use async-signal-safe calls: the path is copied here beforehand.
char g_part[PATH_MAX];
volatile sig_atomic_t g_armed = 0;
struct sigaction g_previous[kCount];
sigset_t g_previous_mask;

void remove_part_and_die(int sig) {
  if (g_armed) ::unlink(g_part);
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // blocked while this handler runs; delivered (fatally) when it returns
}

sigset_t handled_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kSignals) sigaddset(&set, sig);
  return set;
}

}  // namespace

RemovePartOnSignal::RemovePartOnSignal() {
  g_armed = 0;
  const sigset_t set = handled_set();
  ::sigprocmask(SIG_BLOCK, &set, &g_previous_mask);
  struct sigaction sa {};
  sa.sa_handler = remove_part_and_die;
  sa.sa_mask = set;  // one cleanup at a time
  for (int i = 0; i < kCount; ++i) {
    ::sigaction(kSignals[i], nullptr, &g_previous[i]);
    // A signal the caller ignores (nohup's SIGHUP) or handles stays as it is.
    if (g_previous[i].sa_handler == SIG_DFL && !(g_previous[i].sa_flags & SA_SIGINFO)) {
      ::sigaction(kSignals[i], &sa, nullptr);
    }
  }
}

void RemovePartOnSignal::arm(const std::string& part) {
  std::strncpy(g_part, part.c_str(), sizeof(g_part) - 1);
  g_part[sizeof(g_part) - 1] = '\0';
  g_armed = 1;
  ::sigprocmask(SIG_SETMASK, &g_previous_mask, nullptr);  // a signal held meanwhile lands now
}

RemovePartOnSignal::~RemovePartOnSignal() {
  const sigset_t set = handled_set();
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  g_armed = 0;
  for (int i = 0; i < kCount; ++i) ::sigaction(kSignals[i], &g_previous[i], nullptr);
  ::sigprocmask(SIG_SETMASK, &g_previous_mask, nullptr);
}

}  // namespace mtrain::trainer

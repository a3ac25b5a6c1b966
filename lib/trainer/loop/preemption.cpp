#include "lib/trainer/loop/preemption.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>

namespace mtrain::trainer {

namespace {

std::atomic<int> g_stop{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal flag must be lock-free");

extern "C" void on_stop_signal(int signo) {
  int expected = 0;
  g_stop.compare_exchange_strong(expected, signo);
}

}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking reads/writes resume; the loop polls the flag
  for (int s : {SIGUSR1, SIGTERM, SIGINT}) sigaction(s, &sa, nullptr);
}

void uninstall_stop_signal_handlers() {
  for (int s : {SIGUSR1, SIGTERM, SIGINT}) std::signal(s, SIG_DFL);
}

int pending_stop_signal() { return g_stop.load(); }

void clear_stop_signal() { g_stop.store(0); }

std::string signal_name(int signo) {
  switch (signo) {
    case SIGUSR1: return "SIGUSR1";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signo);
  }
}

Heartbeat::Heartbeat(std::string path) : path_(std::move(path)) {}

void Heartbeat::beat() const {
  if (path_.empty()) return;
  const UniqueFd fd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (fd) ::futimens(fd.get(), nullptr);
}

}  // namespace mtrain::trainer

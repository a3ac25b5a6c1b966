#include "lib/trainer/data/mapped_file_faults.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

#include "lib/core/error_file.hpp"

namespace mtrain::trainer {

namespace {

constexpr int kSlots = 16;
constexpr size_t kText = 4096;

struct Slot {
  std::atomic<uintptr_t> begin{0}, end{0};
  char path[kText];     // "the token file 'x' (data.path)"
  char record[kText];   // the error file's text, with "@OFFSET@" left for nothing: see below
  // TORCHELASTIC_ERROR_FILE when the file was registered ("" = none), read at each registration:
  // a process that maps files under different error files (a test binary) reports to the right one.
  char error_file[kText];
  char error_part[kText + 16];
};

Slot g_slots[kSlots];
struct sigaction g_previous {};
std::once_flag g_sigbus_handler_installed;

void put(int fd, const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = ::write(fd, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<size_t>(w);
  }
}

// Decimal without allocation (async-signal-safe).
void put_number(int fd, uint64_t v) {
  char b[24];
  int i = 23;
  b[i] = '\0';
  do {
    b[--i] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0 && i > 0);
  put(fd, b + i);
}

void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  const auto a = reinterpret_cast<uintptr_t>(info->si_addr);
  for (auto& s : g_slots) {
    const uintptr_t b = s.begin.load(std::memory_order_acquire), e = s.end.load(std::memory_order_acquire);
    if (b == 0 || a < b || a >= e) continue;
    put(2, "\nmtrain-worker: SIGBUS reading ");
    put(2, s.path);
    put(2, " at byte ");
    put_number(2, a - b);
    put(2, ": the file was truncated or its storage failed while this rank had it mapped. Do not "
           "write or replace a token file while a job reads it; check the disk, write the file "
           "again and resume from the last checkpoint.\n");
    if (s.error_file[0] != '\0') {
      const int fd = ::open(s.error_part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640);
      if (fd >= 0) {
        put(fd, s.record);
        close_descriptor(fd);  // in a signal handler: no object, async-signal-safe
        if (::rename(s.error_part, s.error_file) != 0) ::unlink(s.error_part);
      }
    }
    // Die of the signal as before: the default action on the re-executed faulting read.
    signal(SIGBUS, SIG_DFL);
    return;
  }
  // Not ours: hand it to whatever was there before us.
  if (g_previous.sa_flags & SA_SIGINFO) {
    if (g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, ctx);
      return;
    }
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
             g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  signal(SIGBUS, SIG_DFL);
}

void copy(char* dst, const std::string& s) {
  const size_t n = std::min(s.size(), kText - 1);
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

}  // namespace

int register_mapped_file(const void* base, uint64_t len, const std::string& path,
                         const std::string& setting) {
  std::call_once(g_sigbus_handler_installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previous);
  });
  for (int i = 0; i < kSlots; ++i) {
    Slot& s = g_slots[i];
    uintptr_t expected = 0;
    if (s.begin.load() != 0) continue;
    copy(s.path, fmt::format("the token file '{}' ({})", path, setting));
    const char* ef = std::getenv("TORCHELASTIC_ERROR_FILE");
    copy(s.error_file, ef != nullptr ? ef : "");
    copy(s.error_part, ef != nullptr && ef[0] != '\0' ? std::string(ef) + ".sigbus" : "");
    ErrorRecord r;
    r.message = fmt::format("SIGBUS reading the token file '{}' ({}): the file was truncated or "
                            "its storage failed while this rank had it mapped. Do not write or "
                            "replace a token file while a job reads it; write it again and resume "
                            "from the last checkpoint.", path, setting);
    const char* rank = std::getenv("RANK");
    r.rank = rank != nullptr ? std::atoi(rank) : -1;
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    r.host = host;
    r.pid = static_cast<long>(::getpid());
    r.when = std::chrono::system_clock::now();
    copy(s.record, error_file_text(r));
    s.end.store(reinterpret_cast<uintptr_t>(base) + len, std::memory_order_release);
    if (s.begin.compare_exchange_strong(expected, reinterpret_cast<uintptr_t>(base))) return i;
  }
  return -1;
}

void forget_mapped_file(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].begin.store(0, std::memory_order_release);
  g_slots[slot].end.store(0, std::memory_order_release);
}

}  // namespace mtrain::trainer

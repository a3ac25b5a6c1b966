#include "lib/launch/guardian.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::launch {

namespace {

enum Op : std::int32_t { kWatch = 1, kForget = 2, kReady = 3 };

struct Record {
  std::int32_t op;
  std::int32_t pgid;
};

constexpr int kGuardFd = 3;  // where the guardian keeps its end

bool is_ignored(int sig) {
  return sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT || sig == SIGUSR1 || sig == SIGUSR2 ||
         sig == SIGPIPE;
}

// Every fd from `first` up, without reading /proc (opendir allocates).
void close_from(int first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, static_cast<unsigned>(first), ~0U, 0U) == 0) return;
#endif
  struct rlimit rl;
  rlim_t limit = 1 << 16;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) limit = rl.rlim_cur;
  if (limit > (1 << 20)) limit = 1 << 20;
  for (rlim_t fd = static_cast<rlim_t>(first); fd < limit; ++fd) close_descriptor(static_cast<int>(fd));
}

// The guardian itself, in the forked child of a multi-threaded process: async-signal-safe calls
// only (no malloc, no stdio, no C++ runtime), and no return.
// rm -rf FOLDER in a child, waited for (fork and exec: async-signal-safe, no allocation).
void remove_folder(const char* folder) {
  pid_t pid = fork();
  if (pid == 0) {
    char* const argv[] = {const_cast<char*>("rm"), const_cast<char*>("-rf"), const_cast<char*>("--"),
                          const_cast<char*>(folder), nullptr};
    execv("/bin/rm", argv);
    execv("/usr/bin/rm", argv);
    _exit(127);
  }
  if (pid < 0) return;
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

[[noreturn]] void guardian_main(int sock, const char* folder) {
  // Its own process group (the launcher sets it too, whoever is first): a signal to the
  // launcher's group (Ctrl-C, kill -KILL -PGID) is not for it. The launcher's group is one it
  // must never be asked to kill.
  pid_t launcher_group = getpgid(getppid());
  setpgid(0, 0);

  struct sigaction ign;
  std::memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  struct sigaction dfl = ign;
  dfl.sa_handler = SIG_DFL;
  // Every signal is blocked since the fork (start()): the launcher's handlers (Asio's) would
  // write into the launcher's own signal pipe. Defaults instead, then unblock.
  for (int s = 1; s < NSIG; ++s)
    if (s != SIGKILL && s != SIGSTOP) sigaction(s, is_ignored(s) ? &ign : &dfl, nullptr);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_NAME, "mtrain-guard", 0, 0, 0);
  if (chdir("/") != 0) {
    // Keeping the launcher's folder busy is harmless.
  }

  // Its end at a known number, stdio on /dev/null, nothing else: above all not the launcher end,
  // or end of file would never come.
  if (sock != kGuardFd) {
    dup2(sock, kGuardFd);
    sock = kGuardFd;
  }
  int null_fd = open("/dev/null", O_RDWR);
  for (int fd = 0; fd < 3; ++fd) {
    if (null_fd >= 0) dup2(null_fd, fd);
    else close_descriptor(fd);
  }
  close_from(kGuardFd + 1);

  Record ready{kReady, static_cast<std::int32_t>(getpid())};
  while (::send(sock, &ready, sizeof ready, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }

  static pid_t table[Guardian::kCapacity];  // zero pages shared with the launcher until written
  std::size_t n = 0;
  for (;;) {
    Record r;
    ssize_t got = recv(sock, &r, sizeof r, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of file: the launcher is gone; an error means the same here
    if (got != static_cast<ssize_t>(sizeof r) || r.pgid <= 1 || r.pgid == launcher_group) continue;
    std::size_t i = 0;
    while (i < n && table[i] != r.pgid) ++i;
    if (r.op == kWatch && i == n && n < Guardian::kCapacity) table[n++] = r.pgid;
    if (r.op == kForget && i < n) table[i] = table[--n];
  }
  for (std::size_t i = 0; i < n; ++i) kill(-table[i], SIGKILL);
  if (folder && *folder == '/') remove_folder(folder);
  _exit(n > 0 ? Guardian::kExitKilledGroups : 0);
}

// waitpid with a bound: the wait status, or nullopt on timeout or if it was reaped elsewhere
// (SIGCHLD ignored).
std::optional<int> reap_within(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return std::nullopt;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    struct timespec ts = {0, 5L * 1000 * 1000};
    nanosleep(&ts, nullptr);
  }
}

void send_self(int fd, Op op) noexcept {
  if (fd < 0) return;
  pid_t self = getpid();
  // Only a group leader speaks for its group: never watch the launcher's group by mistake.
  if (getpgrp() != self) return;
  Record r{op, static_cast<std::int32_t>(self)};
  while (::send(fd, &r, sizeof r, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
}

}  // namespace

Guardian::~Guardian() { close(std::chrono::seconds(2)); }

void Guardian::start() {
  if (fd_) return;
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
    throw RuntimeFailure(fmt::format("cannot create the guardian's socket: {}", std::strerror(errno)));
  // The child starts with every signal blocked until it has its own dispositions.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) guardian_main(sv[1], remove_on_exit_.empty() ? nullptr : remove_on_exit_.c_str());
  int fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  close_descriptor(sv[1]);
  UniqueFd mine(sv[0]);
  if (pid < 0) {
    throw RuntimeFailure(fmt::format("cannot start the guardian process: {}", std::strerror(fork_errno)));
  }
  setpgid(pid, pid);
  fd_ = std::move(mine);
  pid_ = pid;
  // A guardian that stops reading (stopped, or a full queue of unread records) must not hang
  // the launcher or a rank's spawn.
  struct timeval tv = {5, 0};
  setsockopt(fd_.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  // Wait until it is in place (signals ignored, own group), so that a Ctrl-C right after the
  // first spawn cannot reach it half set up.
  struct pollfd p = {fd_.get(), POLLIN, 0};
  Record r{0, 0};
  int ready = 0;
  do ready = poll(&p, 1, 10000);
  while (ready < 0 && errno == EINTR);
  if (ready != 1 || recv(fd_.get(), &r, sizeof r, MSG_DONTWAIT) != static_cast<ssize_t>(sizeof r) || r.op != kReady) {
    fd_.reset();
    kill(pid_, SIGKILL);  // ours, stuck, and watching nothing yet
    reap_within(pid_, std::chrono::seconds(2));
    pid_ = -1;
    throw RuntimeFailure("the guardian process did not start (no answer within 10 s)");
  }
}

bool Guardian::send(int op, pid_t pgid) {
  if (!fd_) return false;
  Record r{op, static_cast<std::int32_t>(pgid)};
  for (;;) {
    ssize_t w = ::send(fd_.get(), &r, sizeof r, MSG_NOSIGNAL);
    if (w == static_cast<ssize_t>(sizeof r)) return true;
    if (w < 0 && errno == EINTR) continue;
    return false;
  }
}

// Whether the last failed send() means the guardian is gone (then it is replaced) rather than
// slow: closing the end of a live guardian would make it kill every watched group.
static bool peer_gone() { return errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN; }

bool Guardian::after_failed_send() {
  if (peer_gone()) return restart();
  std::fprintf(stderr, "mtrain: warning: the guardian process (pid %d) does not read its records (%s)\n",
               static_cast<int>(pid_), std::strerror(errno));
  return false;
}

// (Re)starts the guardian and tells it every watched group; false if that fails.
bool Guardian::restart() {
  if (fd_) {
    if (!warned_gone_) {
      warned_gone_ = true;
      std::fprintf(stderr, "mtrain: warning: the guardian process (pid %d) is gone: starting another one\n",
                   static_cast<int>(pid_));
    }
    int status = 0;
    fd_.reset();
    waitpid(pid_, &status, WNOHANG);
    pid_ = -1;
  }
  try {
    start();
  } catch (const Error& e) {
    std::fprintf(stderr, "mtrain: warning: %s; processes started by ranks may outlive a killed launcher\n",
                 e.what());
    return false;
  }
  for (pid_t g : watched_)
    if (!send(kWatch, g)) return false;
  return true;
}

bool Guardian::watch(pid_t pgid) {
  if (pgid <= 1) return false;
  if (!watched_.count(pgid) && watched_.size() >= kCapacity) {
    if (!warned_full_) {
      warned_full_ = true;
      std::fprintf(stderr, "mtrain: warning: more than %zu process groups: the guardian does not watch group %d\n",
                   kCapacity, static_cast<int>(pgid));
    }
    return false;
  }
  watched_.insert(pgid);
  if (!fd_) return restart();
  return send(kWatch, pgid) || after_failed_send();
}

bool Guardian::forget(pid_t pgid) {
  // Sent even for a group this side never recorded: the child's own "watch" may have arrived.
  watched_.erase(pgid);
  if (!fd_) return false;
  return send(kForget, pgid) || after_failed_send();
}

std::optional<int> Guardian::close(std::chrono::milliseconds timeout) {
  watched_.clear();
  if (!fd_) return std::nullopt;
  fd_.reset();
  pid_t pid = pid_;
  pid_ = -1;
  return reap_within(pid, timeout);
}

void Guardian::remove_on_exit(const std::string& folder) { remove_on_exit_ = folder; }

void Guardian::watch_self(int fd) noexcept { send_self(fd, kWatch); }
void Guardian::forget_self(int fd) noexcept { send_self(fd, kForget); }

}  // namespace mtrain::launch

#include "lib/bench/tcp_barrier.hpp"

#include "lib/core/unique_fd.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::bench {

namespace {

using Clock = std::chrono::steady_clock;

int env_num(const std::map<std::string, std::string>& env, const char* k) {
  auto it = env.find(k);
  auto v = it == env.end() ? std::nullopt : str::parse_uint(it->second);
  if (!v) throw Error(fmt::format("__barrier: {} is not set to a number", k), "Run it under `mtrain launch`.", kExitFailure);
  return static_cast<int>(*v);
}

int ms_left(Clock::time_point deadline) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return ms > 0 ? static_cast<int>(ms) : 0;
}

// Waits for `events` on fd until the deadline; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
  pollfd p{fd, events, 0};
  while (true) {
    int rc = ::poll(&p, 1, ms_left(deadline));
    if (rc > 0) return true;
    if (rc == 0) return false;
    if (errno != EINTR) return false;
  }
}

bool read_all(int fd, void* buf, size_t n, Clock::time_point deadline) {
  auto* p = static_cast<char*>(buf);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, deadline)) return false;
    ssize_t m = ::read(fd, p, n);
    if (m <= 0) return false;
    p += m;
    n -= static_cast<size_t>(m);
  }
  return true;
}

sockaddr_in address(const std::string& host, int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &a.sin_addr) != 1) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res)
      throw Error(fmt::format("__barrier: cannot resolve MASTER_ADDR {}", host), "", kExitFailure);
    a.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
    ::freeaddrinfo(res);
  }
  return a;
}

[[noreturn]] void fail(const std::string& what) {
  throw Error("__barrier: " + what, "Every rank must start within the timeout.", kExitFailure);
}

}  // namespace

int run_tcp_barrier(const std::map<std::string, std::string>& env, int timeout_ms) {
  const int rank = env_num(env, "RANK"), world = env_num(env, "WORLD_SIZE"), port = env_num(env, "MASTER_PORT");
  auto it = env.find("MASTER_ADDR");
  const std::string host = it == env.end() || it->second.empty() ? "127.0.0.1" : it->second;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  if (world <= 1) return 0;
  sockaddr_in addr = address(host, port);

  if (rank == 0) {
    const UniqueFd ls(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(ls.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(ls.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(ls.get(), 1024) != 0)
      fail(fmt::format("rank 0 cannot listen on {}:{}: {}", host, port, std::strerror(errno)));
    std::vector<UniqueFd> peers;
    while (static_cast<int>(peers.size()) < world - 1) {
      if (!wait_fd(ls.get(), POLLIN, deadline))
        fail(fmt::format("only {} of {} ranks arrived", peers.size() + 1, world));
      UniqueFd c(::accept4(ls.get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (!c) continue;
      uint32_t r = 0;
      if (read_all(c.get(), &r, sizeof r, deadline)) peers.push_back(std::move(c));
    }
    const char go = 'g';
    for (const UniqueFd& c : peers) (void)!::write(c.get(), &go, 1);
    return 0;
  }

  while (true) {
    UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    int one = 1;
    ::setsockopt(s.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(s.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
      uint32_t r = static_cast<uint32_t>(rank);
      char go = 0;
      const bool ok = ::write(s.get(), &r, sizeof r) == static_cast<ssize_t>(sizeof r) &&
                      read_all(s.get(), &go, 1, deadline) && go == 'g';
      s.reset();
      if (!ok) fail(fmt::format("rank {} lost rank 0 before the barrier", rank));
      return 0;
    }
    s.reset();
    if (ms_left(deadline) == 0) fail(fmt::format("rank {} could not reach rank 0 at {}:{}", rank, host, port));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace mtrain::bench

#include "lib/launch/preflight.hpp"

#include "lib/core/unique_fd.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace fs = std::filesystem;

namespace mtrain::launch {

static bool is_executable_file(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
}

std::string resolve_program(const std::string& program, const EnvMap& env) {
  if (program.empty()) throw UsageError("the program to launch is empty", "Give a program after `--`.");
  if (program.find('/') != std::string::npos) {
    struct stat st {};
    if (stat(program.c_str(), &st) != 0)
      throw UsageError(fmt::format("program '{}' does not exist", program), "Check the path.");
    if (!S_ISREG(st.st_mode) || access(program.c_str(), X_OK) != 0)
      throw UsageError(fmt::format("program '{}' is not executable", program),
                       fmt::format("Make it executable (chmod +x {}) or run it through its interpreter, "
                                   "e.g. `-- python3 {}`.",
                                   str::shell_quote(program), str::shell_quote(program)));
    return program;
  }
  auto path = env.count("PATH") ? env.at("PATH") : std::string("/usr/local/bin:/usr/bin:/bin");
  bool found_not_exec = false;
  for (const auto& dir : str::split(path, ':')) {
    std::string cand = (dir.empty() ? "." : dir) + "/" + program;
    if (is_executable_file(cand)) return cand;
    if (access(cand.c_str(), F_OK) == 0) found_not_exec = true;
  }
  throw UsageError(
      fmt::format("program '{}' {} on PATH", program, found_not_exec ? "is not executable" : "was not found"),
      "Check the spelling, give its full path, or add its folder to PATH.");
}

static sockaddr_in resolve_v4(const std::string& addr) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) == 1) return sa;
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  if (getaddrinfo(addr.c_str(), nullptr, &hints, &res) != 0 || !res)
    throw UsageError(fmt::format("--master-addr '{}' does not resolve to an address", addr),
                     "Use an IP address or a host name this machine can resolve.");
  sa.sin_addr = reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr;
  freeaddrinfo(res);
  return sa;
}

std::pair<int, int> master_port_range(int ephemeral_lo, int ephemeral_hi) {
  constexpr int kLowest = 10000;
  // The ephemeral range may sit anywhere; use the larger side that is not in it.
  const int below_hi = ephemeral_lo - 1, above_lo = ephemeral_hi + 1;
  const int below = below_hi - kLowest + 1, above = 65535 - above_lo + 1;
  if (below >= above && below > 0) return {kLowest, below_hi};
  if (above > 0) return {std::max(kLowest, above_lo), 65535};
  return {0, -1};
}

static bool bindable(sockaddr_in sa, int port) {
  sa.sin_port = htons(static_cast<uint16_t>(port));
  const UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  return fd && bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0;
}

int pick_free_port(const std::string& addr) {
  sockaddr_in sa = resolve_v4(addr.empty() ? "127.0.0.1" : addr);
  int lo = 32768, hi = 60999;
  if (std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range"); range) range >> lo >> hi;
  const auto [first, last] = master_port_range(lo, hi);
  if (first <= last) {
    std::random_device rd;
    std::mt19937 gen(rd());
    std::uniform_int_distribution<int> pick(first, last);
    for (int tries = 0; tries < 64; ++tries) {
      const int port = pick(gen);
      if (bindable(sa, port)) return port;
    }
  }
  sa.sin_port = 0;
  const UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd || bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    throw RuntimeFailure(fmt::format("could not find a free port on {}: {}", addr, std::strerror(errno)), "");
  }
  socklen_t len = sizeof(sa);
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&sa), &len);
  return ntohs(sa.sin_port);
}

// Find the inode of a listening socket on `port` in /proc/net/tcp{,6}, then the process whose
// file descriptors include that socket.
std::string port_holder(int port) {
  std::string inode;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line) && inode.empty()) {
      std::istringstream ss(line);
      std::string sl, local, remote, state, queues, tr, retr, uid, timeout, ino;
      ss >> sl >> local >> remote >> state >> queues >> tr >> retr >> uid >> timeout >> ino;
      auto colon = local.rfind(':');
      if (colon == std::string::npos || state != "0A") continue;  // 0A = LISTEN
      if (std::stoi(local.substr(colon + 1), nullptr, 16) == port) inode = ino;
    }
  }
  if (inode.empty() || inode == "0") return "";
  const std::string target = "socket:[" + inode + "]";
  std::error_code ec;
  for (const auto& proc : fs::directory_iterator("/proc", ec)) {
    const std::string pid = proc.path().filename();
    if (!str::parse_uint(pid)) continue;
    std::error_code ec2;
    for (const auto& fd : fs::directory_iterator(proc.path() / "fd", ec2)) {
      std::error_code ec3;
      if (fs::read_symlink(fd.path(), ec3).string() == target) {
        std::ifstream comm(proc.path() / "comm");
        std::string name;
        std::getline(comm, name);
        return fmt::format("pid {} ({})", pid, name);
      }
    }
  }
  return "";
}

void check_port_free(const std::string& addr, int port) {
  sockaddr_in sa = resolve_v4(addr);
  sa.sin_port = htons(static_cast<uint16_t>(port));
  UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return;
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));  // as the c10d store will
  const int rc = bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  const int err = errno;
  fd.reset();
  if (rc == 0) return;
  if (err == EADDRNOTAVAIL) return;  // not a local address: the store is elsewhere
  if (err == EADDRINUSE) {
    std::string who = port_holder(port);
    throw UsageError(
        fmt::format("--master-port {} on {} is already in use{}", port, addr, who.empty() ? "" : " by " + who),
        "Stop that process, pick another port with --master-port, or use --master-port auto.");
  }
  throw UsageError(fmt::format("--master-port {} on {} cannot be used: {}", port, addr, std::strerror(err)),
                   "Pick another port with --master-port, or use --master-port auto.");
}

}  // namespace mtrain::launch

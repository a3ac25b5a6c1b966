#include "lib/envreport/system_probe.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <sstream>

#include "lib/core/environment.hpp"
#include "lib/core/strings.hpp"
#include "lib/envreport/run_command.hpp"

namespace mtrain::envreport {

std::optional<std::string> PosixSystemProbe::read_file(const std::string& path) const {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

CommandResult PosixSystemProbe::run(const std::vector<std::string>& argv, int timeout_ms) const {
  RunOptions o;
  o.timeout_ms = timeout_ms;
  return run_command(argv, o);
}

std::string PosixSystemProbe::which(const std::string& program) const {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0 ? program : "";
  const char* path = std::getenv("PATH");
  for (const auto& dir : str::split(path ? path : "/usr/bin:/bin", ':')) {
    if (dir.empty()) continue;
    std::string cand = dir + "/" + program;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
  }
  return "";
}

std::map<std::string, std::string> PosixSystemProbe::environment() const { return process_environment(); }

std::vector<NetInterface> PosixSystemProbe::interfaces() const {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  auto find = [&](const std::string& name) -> NetInterface& {
    for (auto& n : out)
      if (n.name == name) return n;
    out.push_back(NetInterface{name, false, false, {}});
    return out.back();
  };
  for (ifaddrs* a = list; a; a = a->ifa_next) {
    if (!a->ifa_name) continue;
    NetInterface& n = find(a->ifa_name);
    n.up = n.up || (a->ifa_flags & IFF_UP);
    n.loopback = n.loopback || (a->ifa_flags & IFF_LOOPBACK);
    if (!a->ifa_addr) continue;
    char text[INET6_ADDRSTRLEN] = {0};
    if (a->ifa_addr->sa_family == AF_INET) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr, text, sizeof text);
      n.addresses.push_back(text);
    } else if (a->ifa_addr->sa_family == AF_INET6) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr, text, sizeof text);
      n.addresses.push_back(text);
    }
  }
  ::freeifaddrs(list);
  return out;
}

FsSpace PosixSystemProbe::space(const std::string& path) const {
  struct statvfs s {};
  if (::statvfs(path.c_str(), &s) != 0) return {};
  return FsSpace{true, static_cast<uint64_t>(s.f_blocks) * s.f_frsize,
                 static_cast<uint64_t>(s.f_bavail) * s.f_frsize};
}

Limits PosixSystemProbe::limits() const {
  rlimit r{};
  Limits l;
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0) {
    l.open_files_soft = r.rlim_cur == RLIM_INFINITY ? UINT64_MAX : r.rlim_cur;
    l.open_files_hard = r.rlim_max == RLIM_INFINITY ? UINT64_MAX : r.rlim_max;
  }
  return l;
}

Uname PosixSystemProbe::uname() const {
  utsname u{};
  if (::uname(&u) != 0) return {};
  return Uname{u.sysname, u.release, u.machine, u.nodename};
}

int PosixSystemProbe::cpu_count() const {
  cpu_set_t set;
  if (::sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

std::optional<std::string> MemoryProbe::read_file(const std::string& path) const {
  auto it = files.find(path);
  if (it == files.end()) return std::nullopt;
  return it->second;
}

CommandResult MemoryProbe::run(const std::vector<std::string>& argv, int) const {
  auto it = commands.find(str::join(argv, " "));
  if (it != commands.end()) return it->second;
  CommandResult r;
  r.started = !argv.empty() && programs.count(argv[0]);
  r.rc = r.started ? 1 : -1;
  return r;
}

std::string MemoryProbe::which(const std::string& program) const {
  auto it = programs.find(program);
  return it == programs.end() ? "" : it->second;
}

FsSpace MemoryProbe::space(const std::string& path) const {
  auto it = spaces.find(path);
  return it == spaces.end() ? FsSpace{} : it->second;
}

}  // namespace mtrain::envreport

#include "lib/launch/net_address.hpp"

#include "lib/core/unique_fd.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <vector>

namespace mtrain::launch {

namespace {

std::string numeric(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(sa)->sin_addr, buf, sizeof buf);
  else if (sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr, buf, sizeof buf);
  return buf;
}

std::vector<std::string> resolve(const std::string& host) {
  std::vector<std::string> out;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return out;
  for (addrinfo* a = res; a; a = a->ai_next) out.push_back(numeric(a->ai_addr));
  freeaddrinfo(res);
  return out;
}

}  // namespace

bool is_local_address(const std::string& host) {
  auto addrs = resolve(host);
  if (addrs.empty()) return false;
  std::set<std::string> local;
  ifaddrs* ifs = nullptr;
  if (getifaddrs(&ifs) == 0) {
    for (ifaddrs* i = ifs; i; i = i->ifa_next)
      if (i->ifa_addr) local.insert(numeric(i->ifa_addr));
    freeifaddrs(ifs);
  }
  for (const auto& a : addrs)
    if (local.count(a) || a.rfind("127.", 0) == 0 || a == "::1") return true;
  return false;
}

bool names_this_machine(const std::string& host) {
  if (host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1") return true;
  char name[256] = {0};
  if (gethostname(name, sizeof name - 1) == 0 && host == name) return true;
  return is_local_address(host);
}

std::string route_source_address(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return "";
  std::string out;
  for (addrinfo* a = res; a && out.empty(); a = a->ai_next) {
    const UniqueFd fd(socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!fd) continue;
    // connect() on UDP only picks the route and source address.
    if (connect(fd.get(), a->ai_addr, a->ai_addrlen) == 0) {
      sockaddr_storage ss{};
      socklen_t len = sizeof ss;
      if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len) == 0)
        out = numeric(reinterpret_cast<sockaddr*>(&ss));
    }
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace mtrain::launch

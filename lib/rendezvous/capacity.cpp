#include "lib/rendezvous/capacity.hpp"

#include <sys/resource.h>

#include <algorithm>

namespace mtrain::rendezvous {

int wanted_connections(int max_nodes) {
  long want = 2L * std::max(max_nodes, 1) + kConnectionHeadroom;
  return static_cast<int>(std::min<long>(want, 1L << 30));
}

int connection_capacity(int max_nodes, long fd_limit) {
  long usable = std::max<long>(fd_limit - kReservedDescriptors, 1);
  return static_cast<int>(std::min<long>(wanted_connections(max_nodes), usable));
}

long wanted_fd_limit(int max_nodes) { return wanted_connections(max_nodes) + kReservedDescriptors; }

long raise_fd_limit(long wanted) {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 1024;
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur < static_cast<rlim_t>(wanted) && r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = std::min<rlim_t>(static_cast<rlim_t>(wanted), r.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return r.rlim_cur == RLIM_INFINITY ? (1L << 30) : static_cast<long>(r.rlim_cur);
}

}  // namespace mtrain::rendezvous

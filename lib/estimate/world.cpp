#include "mtrain/estimate/world.hpp"

#include <algorithm>

#include "mtrain/core/strings.hpp"

namespace mtrain::estimate {

World world_of(const std::string& nproc, const std::string& nnodes, int gpus_here, int hostfile_hosts,
               int hostfile_slots, int num_nodes) {
  World w;
  if (const auto n = str::parse_uint(nproc); n && *n > 0) {
    w.ranks_per_node = static_cast<int>(*n);
  } else if (nproc == "cpu") {
    w.ranks_per_node = 1;
  } else if (hostfile_slots > 0) {
    w.ranks_per_node = hostfile_slots;
  } else {
    w.ranks_per_node = std::max(gpus_here, 1);
  }
  const auto nn = str::parse_uint(nnodes.substr(0, nnodes.find(':')));
  w.nodes = nn && *nn > 0 ? static_cast<int>(*nn) : 1;
  if (hostfile_hosts > 0 && (!nn || *nn <= 1)) w.nodes = hostfile_hosts;
  if (num_nodes > 0) w.nodes = std::min(w.nodes, num_nodes);
  w.world = w.nodes * w.ranks_per_node;
  return w;
}

}  // namespace mtrain::estimate

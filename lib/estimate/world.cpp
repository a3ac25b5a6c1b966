#include "lib/estimate/world.hpp"

#include <algorithm>

#include "lib/core/strings.hpp"

namespace mtrain::estimate {

World world_of(const config::RankCount& nproc, const std::string& nnodes, const HostCounts& here, int hostfile_hosts,
               int hostfile_slots, int num_nodes) {
  World w;
  // A hostfile gives each node its slots unless a count is given (build_cluster_plan: one rank
  // per selected slot); otherwise the plan's rule on this host.
  if (hostfile_slots > 0 && nproc.kind != config::RankCount::Kind::N) w.ranks_per_node = hostfile_slots;
  else w.ranks_per_node = std::max(1, config::ranks_per_node(nproc, here.cores, here.gpus));
  const auto nn = str::parse_uint(nnodes.substr(0, nnodes.find(':')));
  w.nodes = nn && *nn > 0 ? static_cast<int>(*nn) : 1;
  if (hostfile_hosts > 0 && (!nn || *nn <= 1)) w.nodes = hostfile_hosts;
  if (num_nodes > 0) w.nodes = std::min(w.nodes, num_nodes);
  w.world = w.nodes * w.ranks_per_node;
  return w;
}

}  // namespace mtrain::estimate

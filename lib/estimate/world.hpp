#pragma once
// The world an estimate is for, from the launch settings as `mtrain launch` reads them:
// --nproc-per-node through config::ranks_per_node (the plan's own rule) with this host's cores
// and GPUs as the launcher's host probe counts them, × --nnodes (N, or the MIN of MIN:MAX), or a
// hostfile's hosts (--num-nodes of them) × their slots.
#include <string>

#include "lib/config/rank_count.hpp"

namespace mtrain::estimate {

struct World {
  int world = 1;
  int ranks_per_node = 1;
  int nodes = 1;
};

// What the launcher's host probe found here (lib/launch/host_probe.hpp): usable cores, and the
// GPUs ranks may use (CUDA_VISIBLE_DEVICES honoured; 0 with --device cpu).
struct HostCounts {
  int cores = 1;
  int gpus = 0;
};

// hostfile_slots: slots of the hostfile's first host (0 = none given), hostfile_hosts: its hosts.
// Pure.
World world_of(const config::RankCount& nproc_per_node, const std::string& nnodes, const HostCounts& here,
               int hostfile_hosts, int hostfile_slots, int num_nodes);

}  // namespace mtrain::estimate

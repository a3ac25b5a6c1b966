#pragma once
// The world an estimate is for, from the launch settings as `mtrain launch` reads them:
// --nproc-per-node (a count; auto/gpu: this host's GPUs, else 1; cpu: 1) × --nnodes (N, or the
// MIN of MIN:MAX), or a hostfile's hosts (--num-nodes of them) × their slots.
#include <string>

#include <nlohmann/json.hpp>

namespace mtrain::estimate {

struct World {
  int world = 1;
  int ranks_per_node = 1;
  int nodes = 1;
};

// gpus_here: GPUs this host shows (nproc auto/gpu); hostfile_slots: slots per host of the
// hostfile (0 = none given), hostfile_hosts: its hosts. Pure.
World world_of(const std::string& nproc_per_node, const std::string& nnodes, int gpus_here, int hostfile_hosts,
               int hostfile_slots, int num_nodes);

}  // namespace mtrain::estimate

#pragma once
// Global rank placement across nodes with uneven slot counts: ranks are contiguous per node in
// node-rank order, so node k owns ranks [first_rank, first_rank + local_world_size) and rank 0
// lives on node 0 (the MASTER_ADDR host). Used by the launch plan (static) and checked against
// the rendezvous agreement (dynamic), which follows the same rule.
#include <string>
#include <vector>

#include "lib/topology/inventory.hpp"

namespace mtrain::topology {

struct NodePlacement {
  std::string host;
  int node_rank = 0;
  int first_rank = 0;        // global rank of this node's LOCAL_RANK 0
  int local_world_size = 0;  // LOCAL_WORLD_SIZE
};

struct Placement {
  std::vector<NodePlacement> nodes;  // indexed by node rank
  int world_size = 0;
};

struct RankLocation {
  int node_rank = 0;
  int local_rank = 0;
};

// One node per host, in the given order, each running one rank per listed slot.
Placement place_ranks(const Inventory& inv);
// The same from (host, local rank count) pairs; a count below 1 is an Error naming the host.
Placement place_ranks(const std::vector<std::pair<std::string, int>>& nodes);

// Which node and local rank hold a global rank; out of range is an Error.
RankLocation locate_rank(const Placement& p, int rank);

}  // namespace mtrain::topology

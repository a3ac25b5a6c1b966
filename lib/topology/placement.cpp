#include "lib/topology/placement.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/counted.hpp"
#include "lib/core/error.hpp"

namespace mtrain::topology {

Placement place_ranks(const std::vector<std::pair<std::string, int>>& nodes) {
  if (nodes.empty()) throw Error("no nodes to place ranks on", "Give at least one host.");
  Placement p;
  for (const auto& [host, count] : nodes) {
    if (count < 1)
      throw Error(fmt::format("node '{}' has {} local ranks", host, count),
                  "Every node needs at least one slot; drop the host or give it slots.");
    NodePlacement n;
    n.host = host;
    n.node_rank = static_cast<int>(p.nodes.size());
    n.first_rank = p.world_size;
    n.local_world_size = count;
    p.world_size += count;
    p.nodes.push_back(std::move(n));
  }
  return p;
}

Placement place_ranks(const Inventory& inv) {
  std::vector<std::pair<std::string, int>> nodes;
  for (const auto& h : inv) nodes.emplace_back(h.host, static_cast<int>(h.slots.size()));
  return place_ranks(nodes);
}

RankLocation locate_rank(const Placement& p, int rank) {
  if (rank < 0 || rank >= p.world_size)
    throw Error(fmt::format("rank {} is outside the world of {}", rank, counted(p.world_size, "rank")));
  // Nodes are sorted by first_rank; the owner is the last node starting at or before `rank`.
  auto it = std::upper_bound(p.nodes.begin(), p.nodes.end(), rank,
                             [](int r, const NodePlacement& n) { return r < n.first_rank; });
  const NodePlacement& n = *(it - 1);
  return {n.node_rank, rank - n.first_rank};
}

}  // namespace mtrain::topology

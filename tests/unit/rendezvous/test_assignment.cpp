// The rank assignment of a rendezvous round (lib/rendezvous/assignment.cpp).
#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/rendezvous/assignment.hpp"
#include "lib/rendezvous/frame.hpp"

using namespace mtrain::rendezvous;

TEST_CASE("assignment: contiguous ranks, master is node 0, JSON round trip", "[rendezvous][assignment]") {
  auto a = assign_ranks({{"a", "10.0.0.1", 0, 0, 3}, {"b", "", 0, 0, 1}, {"c", "c", 0, 0, 2}}, 29500, "r");
  CHECK(a.world_size == 6);
  CHECK(a.master_addr == "10.0.0.1");
  CHECK(a.nodes[2].node_rank == 2);
  CHECK(a.nodes[2].first_rank == 4);
  auto b = assignment_from_json(to_json(a));
  CHECK(to_json(b) == to_json(a));
  CHECK_THROWS_AS(assignment_from_json({{"nodes", 3}}), FrameError);
}

#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/topology/hostfile.hpp"
#include "lib/topology/placement.hpp"

using namespace mtrain::topology;

TEST_CASE("placement: uneven nodes get contiguous ranks in node order", "[topology][placement]") {
  auto inv = parse_hostfile("a slots=4\nb gpus=1,3\nc slots=3\n", "hosts");
  auto p = place_ranks(inv);
  REQUIRE(p.nodes.size() == 3);
  CHECK(p.world_size == 9);
  CHECK(p.nodes[0].first_rank == 0);
  CHECK(p.nodes[0].local_world_size == 4);
  CHECK(p.nodes[1].host == "b");
  CHECK(p.nodes[1].node_rank == 1);
  CHECK(p.nodes[1].first_rank == 4);
  CHECK(p.nodes[1].local_world_size == 2);
  CHECK(p.nodes[2].first_rank == 6);
  CHECK(locate_rank(p, 0).node_rank == 0);
  CHECK(locate_rank(p, 5).node_rank == 1);
  CHECK(locate_rank(p, 5).local_rank == 1);
  CHECK(locate_rank(p, 6).node_rank == 2);
  CHECK(locate_rank(p, 8).local_rank == 2);
  CHECK_THROWS_AS(locate_rank(p, 9), mtrain::Error);
  CHECK_THROWS_AS(locate_rank(p, -1), mtrain::Error);
  CHECK_THROWS_WITH(locate_rank(p, 9), Catch::Contains("outside the world of 9 ranks"));
  CHECK_THROWS_WITH(locate_rank(place_ranks({{"a", 1}}), 1),
                    Catch::Contains("outside the world of 1 rank") && !Catch::Contains("1 ranks"));  // issue 45
}

TEST_CASE("placement: every rank maps back to exactly one (node, local rank)", "[topology][placement]") {
  // All shapes of up to 4 nodes with 1..3 ranks each.
  for (int shape = 0; shape < 3 * 3 * 3 * 3; ++shape) {
    std::vector<std::pair<std::string, int>> nodes;
    int s = shape;
    for (int k = 0; k < 4; ++k, s /= 3) nodes.emplace_back("n" + std::to_string(k), 1 + s % 3);
    auto p = place_ranks(nodes);
    int rank = 0;
    for (const auto& n : p.nodes)
      for (int l = 0; l < n.local_world_size; ++l, ++rank) {
        auto loc = locate_rank(p, rank);
        REQUIRE(loc.node_rank == n.node_rank);
        REQUIRE(loc.local_rank == l);
      }
    REQUIRE(rank == p.world_size);
  }
}

TEST_CASE("placement: a node without ranks is an error naming it", "[topology][placement]") {
  CHECK_THROWS_WITH(place_ranks(std::vector<std::pair<std::string, int>>{{"a", 2}, {"b", 0}}),
                    Catch::Contains("node 'b' has 0 local ranks"));
  CHECK_THROWS_AS(place_ranks(Inventory{}), mtrain::Error);
}

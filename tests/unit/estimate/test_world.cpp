#include <catch2/catch.hpp>

#include "mtrain/estimate/world.hpp"

using namespace mtrain::estimate;

TEST_CASE("the world from --nproc-per-node, --nnodes and a hostfile", "[estimate]") {
  auto w = world_of("4", "2", 0, 0, 0, 0);
  CHECK(w.world == 8);
  CHECK(w.ranks_per_node == 4);
  w = world_of("auto", "1", 8, 0, 0, 0);  // one per GPU here
  CHECK(w.world == 8);
  w = world_of("auto", "1", 0, 0, 0, 0);  // no GPU: one rank
  CHECK(w.world == 1);
  w = world_of("2", "2:4", 0, 0, 0, 0);   // elastic: the minimum
  CHECK(w.world == 4);
  w = world_of("auto", "1", 0, 3, 8, 0);  // hostfile: 3 hosts of 8 slots
  CHECK(w.world == 24);
  w = world_of("auto", "1", 0, 3, 8, 2);  // --num-nodes 2
  CHECK(w.world == 16);
}

#include <catch2/catch.hpp>

#include "lib/estimate/world.hpp"

using namespace mtrain::estimate;
using mtrain::config::RankCount;

namespace {
RankCount nproc(const char* text) { return mtrain::config::rank_count_from_text(text, "--nproc-per-node"); }
}  // namespace

TEST_CASE("the world from --nproc-per-node, --nnodes and a hostfile", "[estimate]") {
  auto w = world_of(nproc("4"), "2", {}, 0, 0, 0);
  CHECK(w.world == 8);
  CHECK(w.ranks_per_node == 4);
  w = world_of(nproc("auto"), "1", {4, 8}, 0, 0, 0);  // one per GPU here
  CHECK(w.world == 8);
  w = world_of(nproc("auto"), "1", {4, 0}, 0, 0, 0);  // no GPU: one rank
  CHECK(w.world == 1);
  w = world_of(nproc("2"), "2:4", {}, 0, 0, 0);  // elastic: the minimum
  CHECK(w.world == 4);
  w = world_of(nproc("auto"), "1", {}, 3, 8, 0);  // hostfile: 3 hosts of 8 slots
  CHECK(w.world == 24);
  w = world_of(nproc("auto"), "1", {}, 3, 8, 2);  // --num-nodes 2
  CHECK(w.world == 16);
}

TEST_CASE("cpu is one rank per usable core, as the launch plan counts it", "[estimate]") {
  // Was 1 rank whatever the cores (issue 41 item 1): the estimate planned for another world.
  CHECK(world_of(nproc("cpu"), "1", {6, 2}, 0, 0, 0).world == 6);
  CHECK(world_of(nproc("cpu"), "2", {3, 0}, 0, 0, 0).world == 6);
  CHECK(world_of(nproc("gpu"), "1", {6, 2}, 0, 0, 0).world == 2);
}

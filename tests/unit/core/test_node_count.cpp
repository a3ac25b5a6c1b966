// The one --nnodes grammar (lib/core/node_count.cpp), read without throwing as the registry's
// check of launch.nnodes does, and with the launcher's error.
#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/core/node_count.hpp"

using namespace mtrain;

TEST_CASE("read_nnodes: N, MIN:MAX, and what is wrong where", "[core][nnodes]") {
  auto r = read_nnodes("2:4");
  CHECK(r.problem.empty());
  CHECK(r.count.min == 2);
  CHECK(r.count.max == 4);
  CHECK(r.count.elastic());
  CHECK_FALSE(read_nnodes("3").count.elastic());
  CHECK(read_nnodes("100000").problem.empty());
  CHECK(read_nnodes("100001").problem == "'100001' is not a node count (1 to 100000)");
  CHECK(read_nnodes("0").problem == "'0' is not a node count (1 to 100000)");
  CHECK(read_nnodes("2:x").column == 3);
  CHECK(read_nnodes("2:").problem == "missing node count");
  CHECK(read_nnodes("4:2").problem == "MIN 4 is larger than MAX 2");
  CHECK_FALSE(read_nnodes("1:2:3").problem.empty());
  CHECK_THROWS_WITH(parse_nnodes("4:2", "launch.nnodes"), Catch::Matchers::Contains("launch.nnodes '4:2' column 1"));
}

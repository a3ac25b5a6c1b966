#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/topology/gpu_list.hpp"

using namespace mtrain::topology;

TEST_CASE("gpu lists format as the launcher passes them on", "[topology]") {
  CHECK(format_gpu_list({2, 0}) == "2,0");
}

TEST_CASE("CUDA_VISIBLE_DEVICES follows CUDA's rules", "[topology]") {
  CHECK(parse_visible_devices("").empty());
  CHECK(parse_visible_devices("1,3") == std::vector<int>{1, 3});
  CHECK(parse_visible_devices("1,-1,3") == std::vector<int>{1});  // CUDA stops at an invalid id
  CHECK(parse_visible_devices("-1").empty());
  // CUDA takes no ranges: the error names the entry and its column.
  CHECK_THROWS_WITH(parse_visible_devices("1,0-3"), Catch::Contains("column 3") && Catch::Contains("'0-3' is not a GPU id"));
  CHECK_THROWS_WITH(parse_visible_devices("GPU-8a1b"), Catch::Contains("UUID"));
}

#include <catch2/catch.hpp>

#include "mtrain/core/error.hpp"
#include "mtrain/topology/gpu_list.hpp"

using namespace mtrain::topology;

TEST_CASE("gpu lists parse, keep order and collapse duplicates", "[topology]") {
  CHECK(parse_gpu_list("0,3", "--gpus") == std::vector<int>{0, 3});
  CHECK(parse_gpu_list(" 2, 0 ,2", "--gpus") == std::vector<int>{2, 0});
  CHECK(format_gpu_list({2, 0}) == "2,0");
}

TEST_CASE("gpu list errors name the column", "[topology]") {
  CHECK_THROWS_WITH(parse_gpu_list("0,x", "--gpus"), Catch::Contains("column 3") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(parse_gpu_list("0,,1", "--gpus"), Catch::Contains("column 3") && Catch::Contains("empty"));
  CHECK_THROWS_WITH(parse_gpu_list("-1", "--gpus"), Catch::Contains("column 1"));
  CHECK_THROWS_WITH(parse_gpu_list("", "--gpus"), Catch::Contains("--gpus is empty"));
}

TEST_CASE("CUDA_VISIBLE_DEVICES follows CUDA's rules", "[topology]") {
  CHECK(parse_visible_devices("").empty());
  CHECK(parse_visible_devices("1,3") == std::vector<int>{1, 3});
  CHECK(parse_visible_devices("1,-1,3") == std::vector<int>{1});  // CUDA stops at an invalid id
  CHECK(parse_visible_devices("-1").empty());
  CHECK_THROWS_WITH(parse_visible_devices("GPU-8a1b"), Catch::Contains("UUID"));
}

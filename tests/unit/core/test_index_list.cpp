// The one grammar of GPU and rank lists (lib/core/index_list.cpp): read without throwing as the
// registry's checks of launch.gpus and launch.ranks_filter do, and with the launcher's error.
#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/core/index_list.hpp"

using namespace mtrain;

TEST_CASE("index lists parse, keep order, collapse duplicates and expand ranges", "[core][index_list]") {
  CHECK(parse_index_list("0,3", "--gpus", "GPU id") == std::vector<int>{0, 3});
  CHECK(parse_index_list(" 2, 0 ,2", "--gpus", "GPU id") == std::vector<int>{2, 0});
  CHECK(parse_index_list("0-3", "--gpus", "GPU id") == std::vector<int>{0, 1, 2, 3});
  CHECK(parse_index_list("5,1-2, 2 - 3", "--gpus", "GPU id") == std::vector<int>{5, 1, 2, 3});
  CHECK(parse_index_list("4-4", "--gpus", "GPU id") == std::vector<int>{4});
}

TEST_CASE("index list errors name the column and the item", "[core][index_list]") {
  CHECK_THROWS_WITH(parse_index_list("0,x", "--gpus", "GPU id"), Catch::Contains("column 3") && Catch::Contains("'x' is not a GPU id"));
  CHECK_THROWS_WITH(parse_index_list("0,,1", "--gpus", "GPU id"), Catch::Contains("column 3") && Catch::Contains("empty GPU id"));
  CHECK_THROWS_WITH(parse_index_list("-1", "--gpus", "GPU id"), Catch::Contains("column 1"));
  CHECK_THROWS_WITH(parse_index_list("", "--gpus", "GPU id"), Catch::Contains("the list is empty"));
  CHECK(read_index_list("0,3-1", "rank").problem == "the range '3-1' runs backwards");
  CHECK(read_index_list("0,3-1", "rank").column == 3);
  CHECK(read_index_list("1-x", "rank").problem == "'1-x' is not a rank or a range like 0-3");
  CHECK(read_index_list("1048577", "rank").problem == "'1048577' is not a rank");
  CHECK(read_index_list("0-3", "GPU id", IndexRanges::No).problem == "'0-3' is not a GPU id");
}

TEST_CASE("a selection: empty or all is every index", "[core][index_list]") {
  CHECK(read_index_selection("", "GPU id").problem.empty());
  CHECK(read_index_selection("", "GPU id").ids.empty());
  CHECK(parse_index_selection("all", "--gpus", "GPU id").empty());
  CHECK(parse_index_selection(" all ", "--gpus", "GPU id").empty());
  CHECK(parse_index_selection("1,0", "--gpus", "GPU id") == std::vector<int>{1, 0});
  CHECK_THROWS_WITH(parse_index_selection("all,1", "--gpus", "GPU id"), Catch::Contains("'all' is not a GPU id"));
}

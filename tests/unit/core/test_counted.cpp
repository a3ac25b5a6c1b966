// A count with its noun: "1 rank", never "1 ranks" (issue 45: "1 threads", "1 ranks").
#include <catch2/catch.hpp>

#include "lib/core/counted.hpp"

TEST_CASE("counted: singular for one, plural otherwise", "[core]") {
  CHECK(mtrain::counted(1, "rank") == "1 rank");
  CHECK(mtrain::counted(2, "rank") == "2 ranks");
  CHECK(mtrain::counted(0, "thread") == "0 threads");
}

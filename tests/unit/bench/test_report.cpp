// Tables of the benchmarks (lib/bench/report.cpp).
#include <catch2/catch.hpp>

#include "lib/bench/report.hpp"

using namespace mtrain::bench;

TEST_CASE("tables align columns", "[bench][table]") {
  Table t;
  t.headers = {"name", "value"};
  t.left = {true};
  t.rows = {{"a", "1.0"}, {"longer", "10.25"}};
  CHECK(t.render() == "name    value\na         1.0\nlonger  10.25\n");
}

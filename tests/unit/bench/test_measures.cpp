#include <catch2/catch.hpp>

#include "lib/bench/measures.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::bench;
using Catch::Matchers::Contains;

TEST_CASE("bus bandwidth factors are nccl-tests' (docs/architecture.md §6)", "[bench][busbw]") {
  CHECK(bus_factor("all_reduce", 1) == 0.0);
  CHECK(bus_factor("all_reduce", 2) == 1.0);
  CHECK(bus_factor("all_reduce", 4) == 1.5);
  CHECK(bus_factor("all_reduce", 8) == 1.75);
  CHECK(bus_factor("all_gather", 2) == 0.5);
  CHECK(bus_factor("all_gather", 4) == 0.75);
  CHECK(bus_factor("reduce_scatter", 3) == Approx(2.0 / 3));
  CHECK(bus_factor("broadcast", 4) == 1.0);
  CHECK(bus_factor("barrier", 4) == 0.0);
}

TEST_CASE("algbw is bytes per second, busbw scales it by the factor", "[bench][busbw]") {
  // 64 MiB in 0.1 s: 0.671 GB/s algorithm bandwidth.
  const double bytes = 64.0 * (1 << 20);
  CHECK(algbw_gbps(bytes, 0.1) == Approx(0.67108864));
  CHECK(busbw_gbps("all_reduce", 4, bytes, 0.1) == Approx(0.67108864 * 1.5));
  CHECK(busbw_gbps("all_gather", 4, bytes, 0.1) == Approx(0.67108864 * 0.75));
  CHECK(busbw_gbps("broadcast", 4, bytes, 0.1) == Approx(0.67108864));
  CHECK(algbw_gbps(bytes, 0) == 0);
}

TEST_CASE("sizes are written like nccl-tests' -b/-e", "[bench][sizes]") {
  CHECK(parse_size("1K", "--min-bytes") == 1024);
  CHECK(parse_size("1KiB", "--min-bytes") == 1024);
  CHECK(parse_size("64M", "--x") == 64ll << 20);
  CHECK(parse_size("1g", "--x") == 1ll << 30);
  CHECK(parse_size("4096", "--x") == 4096);
  CHECK_THROWS_WITH(parse_size("64Q", "--max-bytes"), Contains("--max-bytes '64Q' is not a size"));
  CHECK_THROWS_AS(parse_size("", "--x"), mtrain::Error);
  CHECK_THROWS_AS(parse_size("0", "--x"), mtrain::Error);
  CHECK(format_size(1024) == "1K");
  CHECK(format_size(64ll << 20) == "64M");
  CHECK(format_size(1ll << 30) == "1G");
  CHECK(format_size(1000) == "1000");
  CHECK(size_sweep(1024, 8192) == std::vector<int64_t>{1024, 2048, 4096, 8192});
  CHECK(size_sweep(1024, 5000) == std::vector<int64_t>{1024, 2048, 4096});
  CHECK(size_sweep(1 << 10, 1 << 30).size() == 21);
  CHECK_THROWS_WITH(size_sweep(4096, 1024), Contains("larger than --max-bytes"));
}

TEST_CASE("integer lists and summaries", "[bench][stats]") {
  CHECK(parse_int_list("1,2,4,8", "--nproc", 1) == std::vector<int>{1, 2, 4, 8});
  CHECK_THROWS_WITH(parse_int_list("1,0", "--nproc", 1), Contains("'0' is not a whole number >= 1"));
  CHECK_THROWS_AS(parse_int_list("1,x", "--nproc", 1), mtrain::Error);
  Summary s = summarize({3, 1, 2, 10});
  CHECK(s.n == 4);
  CHECK(s.min == 1);
  CHECK(s.max == 10);
  CHECK(s.median == 2.5);
  CHECK(s.mean == 4);
  CHECK(summarize({5}).stddev == 0);
  CHECK_THROWS(summarize({}));
}

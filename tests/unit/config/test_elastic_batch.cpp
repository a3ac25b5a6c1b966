#include <algorithm>

#include <catch2/catch.hpp>

#include "lib/config/elastic_batch.hpp"

using namespace mtrain::config;

namespace {
// The definition, by brute force: w keeps the global batch when micro x w divides it.
std::vector<int64_t> brute_worlds(int64_t global, int64_t micro, int64_t max_world) {
  std::vector<int64_t> out;
  for (int64_t w = 1; w <= max_world; ++w)
    if (global % (micro * w) == 0) out.push_back(w);
  return out;
}
}  // namespace

TEST_CASE("elastic accumulation keeps the global batch at every world size that can", "[config][elastic]") {
  // Every (global batch, micro batch, world) in a box that includes 1, primes and odd sizes.
  for (int64_t global = 1; global <= 97; ++global) {
    for (int64_t micro = 1; micro <= 13; ++micro) {
      const auto valid = brute_worlds(global, micro, global);
      CHECK(worlds_keeping_global_batch(global, micro, global) == valid);
      for (int64_t world = 1; world <= 17; ++world) {
        INFO("global " << global << " micro " << micro << " world " << world);
        const ElasticBatch r = elastic_grad_accum(global, micro, world);
        if (global % (micro * world) == 0) {
          REQUIRE(r.ok);
          CHECK(r.grad_accum >= 1);
          CHECK(r.grad_accum * micro * world == global);
          CHECK(r.problem.empty());
        } else {
          REQUIRE_FALSE(r.ok);
          CHECK(r.valid_worlds == valid);
          CHECK(std::find(r.valid_worlds.begin(), r.valid_worlds.end(), world) == r.valid_worlds.end());
          CHECK_THAT(r.problem, Catch::Contains(std::to_string(global)));
          if (!valid.empty()) CHECK_THAT(r.problem, Catch::Contains(format_world_list(valid)));
        }
      }
    }
  }
}

TEST_CASE("elastic batch: the cases a user meets", "[config][elastic]") {
  // 3 nodes lose one: 24 samples of 4 per rank: accumulation 2 at world 3, 3 at world 2.
  CHECK(elastic_grad_accum(24, 4, 3).grad_accum == 2);
  CHECK(elastic_grad_accum(24, 4, 2).grad_accum == 3);
  CHECK(elastic_grad_accum(24, 4, 6).grad_accum == 1);
  // World 4 cannot keep 24 = 4 x 4 x accum: refused with the sizes that can.
  const ElasticBatch r = elastic_grad_accum(24, 4, 4);
  REQUIRE_FALSE(r.ok);
  CHECK(r.valid_worlds == std::vector<int64_t>{1, 2, 3, 6});
  CHECK_THAT(r.problem, Catch::Contains("world size 4") && Catch::Contains("1, 2, 3 and 6"));
  // More ranks than micro-batches in a step.
  CHECK_FALSE(elastic_grad_accum(8, 4, 3).ok);
  CHECK_THAT(elastic_grad_accum(8, 4, 3).problem, Catch::Contains("1 and 2"));
  // A global batch that no world size keeps.
  const ElasticBatch none = elastic_grad_accum(10, 4, 1);
  REQUIRE_FALSE(none.ok);
  CHECK(none.valid_worlds.empty());
  CHECK_THAT(none.problem, Catch::Contains("not a multiple of train.batch_size 4"));
}

TEST_CASE("elastic batch: large global batches list few sizes and stay fast", "[config][elastic]") {
  // 2^20 x 3: divisors found by the square-root walk, not by trying a million worlds.
  const int64_t global = (int64_t{1} << 20) * 3;
  const auto w = worlds_keeping_global_batch(global, 1, global);
  CHECK(w.size() == 42);  // (20 + 1) x (1 + 1) divisors
  CHECK(w.front() == 1);
  CHECK(w.back() == global);
  CHECK(std::is_sorted(w.begin(), w.end()));
  CHECK(worlds_keeping_global_batch(global, 1, 8) == std::vector<int64_t>{1, 2, 3, 4, 6, 8});
  const std::string text = format_world_list(w);
  CHECK_THAT(text, Catch::Contains("and 26 more"));
  CHECK(format_world_list({5}) == "5");
  CHECK(format_world_list({}).empty());
}

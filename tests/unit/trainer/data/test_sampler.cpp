#include "lib/core/error.hpp"
#include "lib/trainer/data/sampler.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace mtrain::trainer;

namespace {

std::vector<std::vector<int64_t>> all_ranks(int64_t n, int world, bool drop_last, bool shuffle,
                                            uint64_t seed, int64_t epoch) {
  std::vector<std::vector<int64_t>> out;
  for (int r = 0; r < world; ++r) {
    SamplerOptions o{n, r, world, seed, shuffle, drop_last};
    out.push_back(rank_indices(o, epoch));
  }
  return out;
}

const std::vector<int64_t> kSizes = {0, 1, 2, 3, 5, 7, 8, 9, 10, 13, 16, 31, 64, 100, 101, 257};

}  // namespace

TEST_CASE("sampler: drop_last gives disjoint equal shares of a permutation", "[sampler]") {
  for (int world = 1; world <= 8; ++world)
    for (int64_t n : kSizes)
      for (bool shuffle : {true, false}) {
        CAPTURE(world, n, shuffle);
        const auto ranks = all_ranks(n, world, true, shuffle, 7, 0);
        std::set<int64_t> seen;
        for (const auto& idx : ranks) {
          REQUIRE(static_cast<int64_t>(idx.size()) ==
                  samples_per_rank({n, 0, world, 7, shuffle, true}));
          REQUIRE(static_cast<int64_t>(idx.size()) == n / world);
          for (int64_t i : idx) {
            REQUIRE(i >= 0);
            REQUIRE(i < n);
            REQUIRE(seen.insert(i).second);  // disjoint across ranks and within a rank
          }
        }
        REQUIRE(static_cast<int64_t>(seen.size()) == (n / world) * world);
      }
}

TEST_CASE("sampler: padding covers every sample, repeating only to fill", "[sampler]") {
  for (int world = 1; world <= 8; ++world)
    for (int64_t n : kSizes)
      for (bool shuffle : {true, false}) {
        CAPTURE(world, n, shuffle);
        const auto ranks = all_ranks(n, world, false, shuffle, 3, 2);
        const int64_t per = (n + world - 1) / world;
        std::map<int64_t, int> count;
        for (const auto& idx : ranks) {
          REQUIRE(static_cast<int64_t>(idx.size()) == per);
          for (int64_t i : idx) {
            REQUIRE(i >= 0);
            REQUIRE(i < n);
            ++count[i];
          }
        }
        REQUIRE(static_cast<int64_t>(count.size()) == n);  // complete
        const int64_t padding = per * world - n;
        int64_t extra = 0;
        for (const auto& [i, c] : count) extra += c - 1;
        REQUIRE(extra == padding);
        if (n % world == 0)
          for (const auto& [i, c] : count) REQUIRE(c == 1);
      }
}

TEST_CASE("sampler: step s over all ranks equals step s of world 1 with batch B*world",
          "[sampler]") {
  for (int64_t n : {64, 100, 257})
    for (bool drop_last : {true, false})
      for (int world = 1; world <= 8; ++world)
        for (int64_t b : {1, 3}) {
          CAPTURE(n, drop_last, world, b);
          const auto one = rank_indices({n, 0, 1, 11, true, drop_last}, 4);
          const auto ranks = all_ranks(n, world, drop_last, true, 11, 4);
          const int64_t steps = static_cast<int64_t>(ranks[0].size()) / b;
          REQUIRE(steps > 0);
          for (int64_t s = 0; s < steps; ++s) {
            std::vector<int64_t> union_step, world1_step;
            for (int r = 0; r < world; ++r)
              for (int64_t j = 0; j < b; ++j) {
                const auto pos = static_cast<size_t>((s * b + j) * world + r);
                REQUIRE(ranks[static_cast<size_t>(r)][static_cast<size_t>(s * b + j)] ==
                        one[pos % one.size()]);
                union_step.push_back(ranks[static_cast<size_t>(r)][static_cast<size_t>(s * b + j)]);
              }
            for (int64_t k = 0; k < b * world; ++k)
              world1_step.push_back(one[static_cast<size_t>(s * b * world + k) % one.size()]);
            std::sort(union_step.begin(), union_step.end());
            std::sort(world1_step.begin(), world1_step.end());
            REQUIRE(union_step == world1_step);
          }
        }
}

TEST_CASE("sampler: permutation depends on seed and epoch only", "[sampler]") {
  const auto e0 = epoch_permutation(100, 5, 0, true);
  const auto e1 = epoch_permutation(100, 5, 1, true);
  const auto s6 = epoch_permutation(100, 6, 0, true);
  CHECK(e0 == epoch_permutation(100, 5, 0, true));
  CHECK(e0 != e1);
  CHECK(e0 != s6);
  auto sorted = e1;
  std::sort(sorted.begin(), sorted.end());
  const auto identity = epoch_permutation(100, 5, 1, false);
  CHECK(sorted == identity);
  CHECK(identity.front() == 0);
  CHECK(identity.back() == 99);
  // Rank views differ per epoch as well.
  CHECK(rank_indices({100, 1, 4, 5, true, true}, 0) != rank_indices({100, 1, 4, 5, true, true}, 1));
  // A shuffled permutation of 100 elements is not the identity.
  CHECK(e0 != identity);
}

TEST_CASE("sampler: bad options are errors", "[sampler]") {
  CHECK_THROWS_AS(rank_indices({10, 4, 4, 0, true, true}, 0), mtrain::Error);
  CHECK_THROWS_AS(rank_indices({10, -1, 4, 0, true, true}, 0), mtrain::Error);
  CHECK_THROWS_AS(samples_per_rank({10, 0, 0, 0, true, true}), mtrain::Error);
  CHECK_THROWS_AS(samples_per_rank({-1, 0, 1, 0, true, true}), mtrain::Error);
  CHECK(rank_indices({3, 3, 8, 0, true, true}, 0).empty());   // fewer samples than ranks
  CHECK(rank_indices({3, 7, 8, 0, true, false}, 0).size() == 1);
}

#include "lib/trainer/data/sampler.hpp"

#include "lib/core/error.hpp"

#include <fmt/format.h>

#include <numeric>
#include <random>

namespace mtrain::trainer {
namespace {

void check(const SamplerOptions& o) {
  if (o.world < 1) throw RuntimeFailure(fmt::format("sampler world size {} is below 1", o.world));
  if (o.rank < 0 || o.rank >= o.world)
    throw RuntimeFailure(fmt::format("sampler rank {} is outside [0, {})", o.rank, o.world));
  if (o.dataset_size < 0) throw RuntimeFailure(fmt::format("sampler dataset size {} is negative", o.dataset_size));
}

// Unbiased draw from [0, bound) by rejection: the same numbers on every standard library.
uint64_t below(std::mt19937_64& gen, uint64_t bound) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % bound;  // multiple of bound
  uint64_t x;
  do {
    x = gen();
  } while (x >= limit);
  return x % bound;
}

// (seed, epoch) → one 64-bit seed; splitmix64 finaliser so nearby seeds/epochs decorrelate.
uint64_t mix(uint64_t seed, int64_t epoch) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch) + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<int64_t> epoch_permutation(int64_t dataset_size, uint64_t seed, int64_t epoch,
                                       bool shuffle) {
  std::vector<int64_t> perm(static_cast<size_t>(dataset_size));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  if (!shuffle || dataset_size < 2) return perm;
  std::mt19937_64 gen(mix(seed, epoch));
  for (int64_t i = dataset_size - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(below(gen, static_cast<uint64_t>(i) + 1));
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
  }
  return perm;
}

int64_t samples_per_rank(const SamplerOptions& o) {
  check(o);
  const int64_t w = o.world;
  return o.drop_last ? o.dataset_size / w : (o.dataset_size + w - 1) / w;
}

std::vector<int64_t> rank_indices(const SamplerOptions& o, int64_t epoch) {
  const int64_t per_rank = samples_per_rank(o);
  std::vector<int64_t> out;
  if (per_rank == 0) return out;
  const std::vector<int64_t> perm = epoch_permutation(o.dataset_size, o.seed, epoch, o.shuffle);
  out.reserve(static_cast<size_t>(per_rank));
  const int64_t n = o.dataset_size;
  for (int64_t k = 0; k < per_rank; ++k) {
    // Positions past the end (padding) wrap to the head, as often as needed.
    const int64_t pos = k * o.world + o.rank;
    out.push_back(perm[static_cast<size_t>(pos % n)]);
  }
  return out;
}

}  // namespace mtrain::trainer

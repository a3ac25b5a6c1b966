#pragma once
// Distributed sampler: a pure function of (options, epoch), like torch's DistributedSampler.
// A permutation of [0, dataset_size) seeded by (seed, epoch) — identical for every world size —
// is truncated (drop_last) or padded by repeating its head to a multiple of world; rank r then
// takes positions r, r+world, r+2*world, …  Hence step s of rank r with micro-batch B reads
// perm[(s*B + j)*world + r], j < B, and the union over ranks of step s is exactly step s of a
// world-1 run with batch B*world. The shuffle is a Fisher–Yates over a std::mt19937_64 with an
// unbiased bounded draw of our own (std::uniform_int_distribution differs between libraries).
#include <cstdint>
#include <vector>

namespace mtrain::trainer {

struct SamplerOptions {
  int64_t dataset_size = 0;
  int rank = 0;
  int world = 1;
  uint64_t seed = 0;
  bool shuffle = true;
  bool drop_last = true;
};

// Samples each rank gets per epoch: floor(size/world) with drop_last, else ceil(size/world).
int64_t samples_per_rank(const SamplerOptions& o);
// This rank's dataset indices for one epoch, in the order to read them. Throws mtrain::Error
// for world < 1, rank outside [0, world) or a negative size.
std::vector<int64_t> rank_indices(const SamplerOptions& o, int64_t epoch);
// The whole epoch permutation (identity without shuffle), before truncation/padding.
std::vector<int64_t> epoch_permutation(int64_t dataset_size, uint64_t seed, int64_t epoch,
                                       bool shuffle);

}  // namespace mtrain::trainer

#pragma once
// Constructors of the concrete datasets (internal to lib/trainer/data; make_dataset is the API).
#include "mtrain/trainer/data/dataset.hpp"

namespace mtrain::trainer {

std::unique_ptr<Dataset> make_synthetic(const DataSpec& d, const ModelSpec& m, Split split,
                                        uint64_t seed);
std::unique_ptr<Dataset> make_text(const DataSpec& d, const ModelSpec& m, Split split);
std::unique_ptr<Dataset> make_cifar10(const DataSpec& d, const ModelSpec& m, Split split);
std::unique_ptr<Dataset> make_tensors(const DataSpec& d, Split split);

// Throws mtrain::Error unless 0 <= index < size.
void check_index(int64_t index, int64_t size, const char* dataset);

// Counter-based random numbers: value k of stream (seed, a, b) is a pure function, so a sample
// is the same whoever generates it and in whatever order (splitmix64 over a mixed key).
struct CounterRng {
  uint64_t key;
  CounterRng(uint64_t seed, uint64_t a, uint64_t b = 0);
  uint64_t bits(uint64_t k) const;
  double uniform(uint64_t k) const;  // [0, 1)
  double normal(uint64_t k) const;   // N(0, 1), Box–Muller over draws 2k and 2k+1
};

}  // namespace mtrain::trainer

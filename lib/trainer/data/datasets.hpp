#pragma once
// Constructors of the concrete datasets (internal to lib/trainer/data; make_dataset is the API).
#include "lib/trainer/data/dataset.hpp"

#include <cstring>

namespace mtrain::trainer {

std::unique_ptr<Dataset> make_synthetic(const DataSpec& d, const ModelSpec& m, Split split,
                                        uint64_t seed);
std::unique_ptr<Dataset> make_text(const DataSpec& d, const ModelSpec& m, Split split);
std::unique_ptr<Dataset> make_cifar10(const DataSpec& d, const ModelSpec& m, Split split);
std::unique_ptr<Dataset> make_tokens(const DataSpec& d, const ModelSpec& m, Split split);

// Throws mtrain::Error unless `m` is a language model (logits [B,T,V] against token targets
// [B,T]): the one rule for the datasets of token windows (text, tokens).
void require_language_model(const ModelSpec& m, const char* dataset);

// A language-model batch cut from windows of block+1 token ids: fill(index, w) writes the
// block+1 ids of sample `index` into w; input = w[0, block), target = w[1, block] (the next
// token at every position). The one definition for text, tokens and the synthetic chain.
template <class Fill>
Batch window_batch(const std::vector<int64_t>& indices, int64_t block, Fill&& fill) {
  const auto n = static_cast<int64_t>(indices.size());
  at::Tensor x = at::empty({n, block}, at::kLong);
  at::Tensor y = at::empty({n, block}, at::kLong);
  std::vector<int64_t> w(static_cast<size_t>(block + 1));
  const auto row = static_cast<size_t>(block) * sizeof(int64_t);
  for (int64_t s = 0; s < n; ++s) {
    fill(indices[static_cast<size_t>(s)], w.data());
    std::memcpy(x.data_ptr<int64_t>() + s * block, w.data(), row);
    std::memcpy(y.data_ptr<int64_t>() + s * block, w.data() + 1, row);
  }
  return {x, y};
}

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

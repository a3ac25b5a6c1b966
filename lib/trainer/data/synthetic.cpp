// Synthetic data, generated on the fly from (seed, global index) so any rank can produce any
// sample. Train holds indices [0, num_samples); Val the next ceil(num_samples·val_fraction).
// The tasks are learnable by construction, so a falling loss shows the trainer works:
//   features  x ~ N(0, I_d), label = argmax(x·W) for a fixed random teacher W [d, classes]
//   images    class prototype (a random 8x8x3 pattern, upsampled to 32x32), circularly shifted
//             by up to ±3 pixels, plus N(0, 0.5²) noise
//   tokens    walks of a fixed random sparse Markov chain: each token has four successors with
//             probabilities .55/.25/.15/.05 (entropy ≈ 1.1 nats, vs ln(vocab) at the start)
#include "lib/core/error.hpp"
#include "lib/trainer/data/datasets.hpp"

#include <fmt/format.h>

#include <cmath>

namespace mtrain::trainer {
namespace {

enum Stream : uint64_t { kTeacher = 1, kFeatures, kPrototype, kShift, kNoise, kChain, kWalk };

class SyntheticBase : public Dataset {
 public:
  SyntheticBase(int64_t size, int64_t first, uint64_t seed)
      : size_(size), first_(first), seed_(seed) {}
  int64_t size() const override { return size_; }

 protected:
  // Global sample index of dataset index i (Val continues after Train).
  uint64_t global(int64_t i) const {
    check_index(i, size_, "synthetic");
    return static_cast<uint64_t>(first_ + i);
  }
  int64_t size_, first_;
  uint64_t seed_;
};

class Features : public SyntheticBase {
 public:
  Features(int64_t size, int64_t first, uint64_t seed, int64_t dim, int64_t classes)
      : SyntheticBase(size, first, seed), dim_(dim), classes_(classes),
        teacher_(static_cast<size_t>(dim * classes)) {
    const CounterRng rng(seed, kTeacher);
    for (size_t k = 0; k < teacher_.size(); ++k) teacher_[k] = rng.normal(k);
  }

  Batch batch(const std::vector<int64_t>& indices) const override {
    const auto n = static_cast<int64_t>(indices.size());
    at::Tensor x = at::empty({n, dim_}, at::kFloat);
    at::Tensor y = at::empty({n}, at::kLong);
    float* xp = x.data_ptr<float>();
    int64_t* yp = y.data_ptr<int64_t>();
    std::vector<double> row(static_cast<size_t>(dim_));
    for (int64_t s = 0; s < n; ++s) {
      const CounterRng rng(seed_, kFeatures, global(indices[static_cast<size_t>(s)]));
      for (int64_t j = 0; j < dim_; ++j) {
        row[static_cast<size_t>(j)] = rng.normal(static_cast<uint64_t>(j));
        xp[s * dim_ + j] = static_cast<float>(row[static_cast<size_t>(j)]);
      }
      int64_t best = 0;
      double best_score = -1e300;
      for (int64_t c = 0; c < classes_; ++c) {
        double score = 0;
        for (int64_t j = 0; j < dim_; ++j)
          score += row[static_cast<size_t>(j)] * teacher_[static_cast<size_t>(j * classes_ + c)];
        if (score > best_score) best_score = score, best = c;
      }
      yp[s] = best;
    }
    return {x, y};
  }

 private:
  int64_t dim_, classes_;
  std::vector<double> teacher_;
};

class Images : public SyntheticBase {
 public:
  static constexpr int64_t kSide = 32, kCoarse = 8, kMaxShift = 3;
  Images(int64_t size, int64_t first, uint64_t seed, int64_t classes, bool flatten)
      : SyntheticBase(size, first, seed), classes_(classes), flatten_(flatten) {
    const CounterRng rng(seed, kPrototype);
    coarse_.resize(static_cast<size_t>(classes * 3 * kCoarse * kCoarse));
    for (size_t k = 0; k < coarse_.size(); ++k) coarse_[k] = static_cast<float>(rng.normal(k));
  }

  Batch batch(const std::vector<int64_t>& indices) const override {
    const auto n = static_cast<int64_t>(indices.size());
    const int64_t pixels = 3 * kSide * kSide;
    at::Tensor x = at::empty({n, 3, kSide, kSide}, at::kFloat);
    at::Tensor y = at::empty({n}, at::kLong);
    float* xp = x.data_ptr<float>();
    int64_t* yp = y.data_ptr<int64_t>();
    const int64_t scale = kSide / kCoarse;
    for (int64_t s = 0; s < n; ++s) {
      const uint64_t g = global(indices[static_cast<size_t>(s)]);
      const CounterRng shift(seed_, kShift, g), noise(seed_, kNoise, g);
      const auto label = static_cast<int64_t>(shift.bits(0) % static_cast<uint64_t>(classes_));
      const int64_t span = 2 * kMaxShift + 1;
      const int64_t dy = static_cast<int64_t>(shift.bits(1) % span) - kMaxShift;
      const int64_t dx = static_cast<int64_t>(shift.bits(2) % span) - kMaxShift;
      const float* proto = &coarse_[static_cast<size_t>(label * 3 * kCoarse * kCoarse)];
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t i = 0; i < kSide; ++i)
          for (int64_t j = 0; j < kSide; ++j) {
            const int64_t si = ((i - dy) % kSide + kSide) % kSide;
            const int64_t sj = ((j - dx) % kSide + kSide) % kSide;
            const float base = proto[(c * kCoarse + si / scale) * kCoarse + sj / scale];
            const int64_t k = (c * kSide + i) * kSide + j;
            xp[s * pixels + k] =
                base + 0.5f * static_cast<float>(noise.normal(static_cast<uint64_t>(k)));
          }
      yp[s] = label;
    }
    if (flatten_) x = x.reshape({n, pixels});
    return {x, y};
  }

 private:
  int64_t classes_;
  bool flatten_;
  std::vector<float> coarse_;
};

class Tokens : public SyntheticBase {
 public:
  static constexpr int kFanOut = 4;
  Tokens(int64_t size, int64_t first, uint64_t seed, int64_t vocab, int64_t block)
      : SyntheticBase(size, first, seed), vocab_(vocab), block_(block),
        next_(static_cast<size_t>(vocab * kFanOut)) {
    const CounterRng rng(seed, kChain);
    for (size_t k = 0; k < next_.size(); ++k)
      next_[k] = static_cast<int64_t>(rng.bits(k) % static_cast<uint64_t>(vocab));
  }

  Batch batch(const std::vector<int64_t>& indices) const override {
    return window_batch(indices, block_, [&](int64_t index, int64_t* w) {
      const CounterRng rng(seed_, kWalk, global(index));
      auto tok = static_cast<int64_t>(rng.bits(0) % static_cast<uint64_t>(vocab_));
      for (int64_t t = 0; t <= block_; ++t) {
        w[t] = tok;
        const double u = rng.uniform(static_cast<uint64_t>(t) + 1);
        const int pick = u < 0.55 ? 0 : u < 0.80 ? 1 : u < 0.95 ? 2 : 3;
        tok = next_[static_cast<size_t>(tok * kFanOut + pick)];
      }
    });
  }

 private:
  int64_t vocab_, block_;
  std::vector<int64_t> next_;
};

}  // namespace

std::unique_ptr<Dataset> make_synthetic(const DataSpec& d, const ModelSpec& m, Split split,
                                        uint64_t seed) {
  if (d.num_samples < 1)
    throw UsageError(fmt::format("synthetic num_samples {} is below 1", d.num_samples)).at("data.num_samples");
  const auto val = static_cast<int64_t>(std::ceil(static_cast<double>(d.num_samples) * d.val_fraction));
  const int64_t size = split == Split::Train ? d.num_samples : val;
  const int64_t first = split == Split::Train ? 0 : d.num_samples;
  if (m.name == config::ModelName::Mlp) {
    // An mlp whose input is an image's worth of pixels learns the image task, flattened.
    if (m.input_dim == 3 * 32 * 32)
      return std::make_unique<Images>(size, first, seed, m.num_classes, true);
    return std::make_unique<Features>(size, first, seed, m.input_dim, m.num_classes);
  }
  if (config::is_resnet(m.name))
    return std::make_unique<Images>(size, first, seed, m.num_classes, false);
  if (m.name == config::ModelName::Gpt) return std::make_unique<Tokens>(size, first, seed, m.vocab_size, m.block_size);
  throw UsageError(fmt::format("synthetic data has no task for model '{}'", config::to_string(m.name))).at("data.name");
}

}  // namespace mtrain::trainer

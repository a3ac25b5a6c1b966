#include "lib/trainer/data/dataset.hpp"

#include "lib/core/error.hpp"
#include "lib/trainer/data/datasets.hpp"

#include <fmt/format.h>

#include <cmath>

namespace mtrain::trainer {

std::unique_ptr<Dataset> make_dataset(const DataSpec& d, const ModelSpec& m, Split split,
                                      uint64_t seed) {
  switch (d.name) {
    case config::DataName::Synthetic: return make_synthetic(d, m, split, seed);
    case config::DataName::Text: return make_text(d, m, split);
    case config::DataName::Cifar10: return make_cifar10(d, m, split);
    case config::DataName::Tokens: return make_tokens(d, m, split);
    case config::DataName::Tensors: return make_tensors(d, split);
    case config::DataName::Auto: break;
  }
  // TrainJob resolves auto by the model (config::effective_data_name) before any dataset is made.
  throw RuntimeFailure("dataset 'auto' reached the trainer unresolved", "").at("data.name");
}

// Token windows need a model that maps ids [B,T] to logits [B,T,V] scored against the next ids:
// the built-in gpt, or a TorchScript module trained with model.loss lm_cross_entropy.
void require_language_model(const ModelSpec& m, const char* dataset) {
  if (m.name == config::ModelName::Gpt) return;
  if (m.name == config::ModelName::Torchscript && (m.loss == config::LossName::LmCrossEntropy || m.language_model)) return;
  // The package's programs check the windows' shape and dtype against what they were compiled for.
  if (m.name == config::ModelName::Compiled) return;
  throw UsageError(fmt::format("{} data needs a language model, not '{}'", dataset, config::to_string(m.name)),
                   "use model gpt, or a TorchScript model with model.loss lm_cross_entropy (logits [B,T,V] "
                   "against targets [B,T]), or data synthetic/cifar10 for classifiers")
      .at("data.name");
}

void check_index(int64_t index, int64_t size, const char* dataset) {
  if (index < 0 || index >= size)
    throw RuntimeFailure(fmt::format("{} sample index {} is outside [0, {})", dataset, index, size), "");
}

namespace {
uint64_t splitmix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
}  // namespace

CounterRng::CounterRng(uint64_t seed, uint64_t a, uint64_t b)
    : key(splitmix(splitmix(splitmix(seed) ^ a) ^ (b * 0xD6E8FEB86659FD93ULL))) {}

uint64_t CounterRng::bits(uint64_t k) const { return splitmix(key ^ splitmix(k)); }

double CounterRng::uniform(uint64_t k) const {
  return static_cast<double>(bits(k) >> 11) * (1.0 / 9007199254740992.0);  // 53 bits
}

double CounterRng::normal(uint64_t k) const {
  const double u1 = 1.0 - uniform(2 * k);  // (0, 1]
  const double u2 = uniform(2 * k + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace mtrain::trainer

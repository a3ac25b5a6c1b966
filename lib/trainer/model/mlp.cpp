// mlp: input_dim → hidden × (depth − 1) → num_classes, GELU between layers.
#include "lib/core/error.hpp"
#include "lib/trainer/model/layers.hpp"
#include "lib/trainer/model/models.hpp"

#include <fmt/format.h>

namespace mtrain::trainer {
namespace {

class Mlp : public TaskModel {
 public:
  Mlp(const ModelSpec& s, uint64_t seed) : TaskModel() {
    layers::Init init(seed);
    auto list = register_module("layers", layers::container("ModuleList"));
    for (int64_t i = 0; i < s.depth; ++i) {
      const int64_t in = i == 0 ? s.input_dim : s.hidden;
      const int64_t out = i == s.depth - 1 ? s.num_classes : s.hidden;
      layers_.push_back(list->register_module(std::to_string(i),
                                              std::make_shared<layers::Dense>(in, out, true, init)));
    }
    input_dim_ = s.input_dim;
  }

  at::Tensor forward(const at::Tensor& input) override {
    if (input.dim() < 2 || input.size(-1) != input_dim_)
      throw UsageError(fmt::format("mlp expects inputs [batch, {}], got {}", input_dim_, shape_of(input)));
    at::Tensor x = input;
    for (size_t i = 0; i < layers_.size(); ++i) {
      x = layers_[i]->forward(x);
      if (i + 1 < layers_.size()) x = at::gelu(x);
    }
    return x;
  }

  at::Tensor loss(const Batch& b) override { return cross_entropy(forward(b.input), b.target); }
  EvalStats evaluate(const Batch& b) override {
    return evaluate_with(*this, [&] { return classifier_stats(forward(b.input), b.target); });
  }
  bool is_language_model() const override { return false; }
  int64_t tokens_per_sample() const override { return 1; }
  std::vector<std::string> block_prefixes() const override {
    std::vector<std::string> out;
    for (size_t i = 0; i < layers_.size(); ++i) out.push_back("layers." + std::to_string(i));
    return out;
  }

 private:
  std::vector<std::shared_ptr<layers::Dense>> layers_;
  int64_t input_dim_ = 0;
};

}  // namespace

std::shared_ptr<TaskModel> make_mlp(const ModelSpec& s, uint64_t seed) {
  if (s.depth < 1 || s.hidden < 1 || s.input_dim < 1 || s.num_classes < 2)
    throw UsageError(fmt::format("mlp needs depth >= 1, hidden >= 1, input_dim >= 1 and "
                                 "num_classes >= 2 (got {}, {}, {}, {})",
                                 s.depth, s.hidden, s.input_dim, s.num_classes))
        .at("model");
  return std::make_shared<Mlp>(s, seed);
}

}  // namespace mtrain::trainer

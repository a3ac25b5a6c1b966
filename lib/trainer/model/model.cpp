#include "lib/trainer/model/model.hpp"

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/trainer/model/models.hpp"

#include <ATen/core/grad_mode.h>

#include <fmt/format.h>

namespace mtrain::trainer {

bool TaskModel::recompute_now() const {
  return recompute_blocks_ && is_training() && at::GradMode::is_enabled();
}

std::shared_ptr<TaskModel> make_model(const ModelSpec& spec, uint64_t seed) {
  using config::ModelName;
  switch (spec.name) {
    case ModelName::Mlp: return make_mlp(spec, seed);
    case ModelName::Gpt: return make_gpt(spec, seed);
    case ModelName::Resnet18: return make_resnet(spec, 18, seed);
    case ModelName::Resnet50: return make_resnet(spec, 50, seed);
    case ModelName::Torchscript: return make_torchscript(spec);
    case ModelName::Compiled: return make_compiled(spec);
  }
  throw RuntimeFailure(fmt::format("model '{}' has no implementation", config::to_string(spec.name)), "");
}

std::string shape_of(const at::Tensor& t) {
  std::vector<std::string> dims;
  for (int64_t d : t.sizes()) dims.push_back(std::to_string(d));
  return "[" + str::join(dims, "x") + "]";
}

at::Tensor cross_entropy(const at::Tensor& logits, const at::Tensor& target) {
  return at::nll_loss(at::log_softmax(logits.to(at::kFloat), -1), target);
}

EvalStats classifier_stats(const at::Tensor& logits, const at::Tensor& target) {
  EvalStats s;
  s.loss_sum = at::nll_loss(at::log_softmax(logits.to(at::kFloat), -1), target, {},
                            at::Reduction::Sum)
                   .item<double>();
  // Targets of -100 are ignored by nll_loss (PyTorch's ignore_index: a masked LM's unmasked
  // tokens, padding): they are not counted, so the mean is over the targets that have a loss.
  s.count = target.ne(-100).sum().item<int64_t>();
  s.correct = logits.argmax(-1).eq(target).sum().item<int64_t>();
  return s;
}

}  // namespace mtrain::trainer

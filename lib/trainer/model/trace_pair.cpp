#include "lib/trainer/model/trace_pair.hpp"

#include <map>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/comm/dtype_names.hpp"
#include "lib/trainer/model/models.hpp"

namespace mtrain::trainer {
namespace {

const char* const kMakePair =
    "trace one model object twice, in train mode for model.path and in eval mode for "
    "model.eval_path — torch.jit.save(torch.jit.trace(model.train(), example), \"train.pt\"), then "
    "torch.jit.save(torch.jit.trace(model.eval(), example), \"eval.pt\") — and launch with "
    "--model-path train.pt --set model.eval_path=eval.pt: the worker trains with the first and "
    "validates with the second, on one set of weights";

// Parameters, then buffers, by their dotted state_dict names, as the module's slots hold them.
std::vector<std::pair<std::string, at::Tensor>> named_tensors(const torch::jit::Module& m) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : m.named_parameters(/*recurse=*/true)) out.emplace_back(p.name, p.value);
  for (const auto& b : m.named_buffers(/*recurse=*/true)) out.emplace_back(b.name, b.value);
  return out;
}

std::string described(const at::Tensor& t) { return dtype_name(t.scalar_type()) + " " + shape_of(t); }

// The first way the two files' tensors differ, "" when none does.
std::string tensor_difference(const torch::jit::Module& train, const torch::jit::Module& eval) {
  const auto a = named_tensors(train);
  const auto b = named_tensors(eval);
  std::map<std::string, at::Tensor> in_eval(b.begin(), b.end());
  std::map<std::string, at::Tensor> in_train(a.begin(), a.end());
  for (const auto& [name, t] : a) {
    const auto it = in_eval.find(name);
    if (it == in_eval.end()) return fmt::format("'{}' ({}) is in model.path only", name, described(t));
    if (it->second.sizes() != t.sizes() || it->second.scalar_type() != t.scalar_type())
      return fmt::format("'{}' is {} in model.path and {} in model.eval_path", name, described(t),
                         described(it->second));
  }
  for (const auto& [name, t] : b)
    if (in_train.count(name) == 0) return fmt::format("'{}' ({}) is in model.eval_path only", name, described(t));
  return "";
}

}  // namespace

void check_trace_pair(const ModelFile& train, const ModelFile* eval) {
  if (eval == nullptr) {
    if (!train.facts.any_frozen()) return;
    const bool eval_only = train.facts.frozen_training.empty();
    throw UsageError(fmt::format("the TorchScript model '{}' was made by torch.jit.trace, which recorded the "
                                 "training/evaluation mode of its layers as constants ({}): they would act "
                                 "the same in training and in validation{}, and model.eval_path (the "
                                 "eval-mode trace to validate with) is not set",
                                 train.path, train.facts.describe_frozen(),
                                 eval_only ? " (this trace was made in eval mode: training would never apply "
                                             "dropout or update BatchNorm statistics)"
                                           : ""),
                     fmt::format("{}; or script the module instead: torch.jit.save(torch.jit.script(model), "
                                 "PATH); or, for dropout, set its p to 0.0 before tracing (a dropout with "
                                 "p = 0 is the identity in both modes and is accepted)",
                                 kMakePair))
        .at("model.path");
  }
  if (!train.facts.frozen_eval.empty())
    throw UsageError(fmt::format("model.path '{}' was traced in eval mode ({}){}: training would never apply "
                                 "dropout or update BatchNorm statistics",
                                 train.path, train.facts.describe_frozen(),
                                 eval->facts.frozen_training.empty() ? ""
                                                                     : fmt::format(", and model.eval_path '{}' in "
                                                                                   "train mode — the two look swapped",
                                                                                   eval->path)),
                     kMakePair)
        .at("model.path");
  if (!eval->facts.frozen_training.empty())
    throw UsageError(fmt::format("model.eval_path '{}' was traced in train mode ({}): validation would apply "
                                 "dropout and update BatchNorm statistics",
                                 eval->path, eval->facts.describe_frozen()),
                     kMakePair)
        .at("model.eval_path");
  std::string diff = tensor_difference(train.module, eval->module);
  const bool train_loss = train.module.find_method("loss").has_value();
  if (diff.empty() && train_loss != eval->module.find_method("loss").has_value())
    diff = fmt::format("model.{}path has a loss method and the other has none", train_loss ? "" : "eval_");
  if (!diff.empty())
    throw UsageError(fmt::format("model.eval_path '{}' is not a trace of the module in model.path '{}': {}", eval->path,
                                 train.path, diff),
                     fmt::format("{} (the two must hold the same parameters and buffers)", kMakePair))
        .at("model.eval_path");
}

void bind_eval_trace(torch::jit::Module& eval, const torch::jit::Module& train) {
  const auto tensors = named_tensors(train);
  const std::map<std::string, at::Tensor> by_name(tensors.begin(), tensors.end());
  for (const auto& sub : eval.named_modules()) {
    const std::string prefix = sub.name.empty() ? "" : sub.name + ".";
    torch::jit::Module owner = sub.value;
    std::vector<std::string> slots;
    for (const auto& p : owner.named_parameters(/*recurse=*/false)) slots.push_back(p.name);
    for (const auto& b : owner.named_buffers(/*recurse=*/false)) slots.push_back(b.name);
    for (const auto& name : slots) owner.setattr(name, by_name.at(prefix + name));
  }
}

}  // namespace mtrain::trainer

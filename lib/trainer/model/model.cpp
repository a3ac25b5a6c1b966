#include "mtrain/trainer/model/model.hpp"

#include "mtrain/config/registry.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/trainer/model/models.hpp"

#include <ATen/core/grad_mode.h>

#include <fmt/format.h>

namespace mtrain::trainer {

ModelSpec model_spec_from_job(const nlohmann::json& job) {
  nlohmann::json full = config::job_registry().defaults();
  full.merge_patch(job);
  const nlohmann::json& m = full.at("model");
  ModelSpec s;
  s.name = m.at("name").get<std::string>();
  s.n_layer = m.at("n_layer").get<int64_t>();
  s.n_head = m.at("n_head").get<int64_t>();
  s.n_embd = m.at("n_embd").get<int64_t>();
  s.block_size = m.at("block_size").get<int64_t>();
  s.vocab_size = m.at("vocab_size").get<int64_t>();
  s.dropout = m.at("dropout").get<double>();
  s.hidden = m.at("hidden").get<int64_t>();
  s.depth = m.at("depth").get<int64_t>();
  s.input_dim = m.at("input_dim").get<int64_t>();
  s.num_classes = m.at("num_classes").get<int64_t>();
  s.path = m.at("path").get<std::string>();
  s.loss = m.at("loss").get<std::string>();
  s.wrap_module_types = full.at("fsdp").at("wrap_module_types").get<std::string>();
  s.wrap_policy = full.at("fsdp").at("wrap_policy").get<std::string>();
  s.min_num_params = full.at("fsdp").at("min_num_params").get<int64_t>();
  s.activation_checkpointing = full.at("fsdp").at("activation_checkpointing").get<bool>();
  s.language_model = s.loss == "lm_cross_entropy" || full.at("data").at("name") == "tokens";
  return s;
}

bool TaskModel::recompute_now() const {
  return recompute_blocks_ && is_training() && at::GradMode::is_enabled();
}

std::vector<std::string> model_names() {
  return {"mlp", "gpt", "resnet18", "resnet50", "torchscript"};
}

std::shared_ptr<TaskModel> make_model(const ModelSpec& spec, uint64_t seed) {
  if (spec.name == "mlp") return make_mlp(spec, seed);
  if (spec.name == "gpt") return make_gpt(spec, seed);
  if (spec.name == "resnet18") return make_resnet(spec, 18, seed);
  if (spec.name == "resnet50") return make_resnet(spec, 50, seed);
  if (spec.name == "torchscript") return make_torchscript(spec);
  const auto names = model_names();
  const auto near = str::closest(spec.name, names);
  throw Error(fmt::format("unknown model '{}'", spec.name),
              near ? fmt::format("did you mean '{}'? (one of {})", *near, str::join(names, ", "))
                   : fmt::format("use one of {}", str::join(names, ", ")))
      .at("model.name");
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
  s.count = target.numel();
  s.correct = logits.argmax(-1).eq(target).sum().item<int64_t>();
  return s;
}

}  // namespace mtrain::trainer

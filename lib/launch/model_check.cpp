#include "mtrain/launch/model_check.hpp"

#include <fmt/format.h>

#include "mtrain/config/names.hpp"
#include "mtrain/config/registry.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/core/torchscript_trust.hpp"

namespace mtrain::launch {

std::optional<Error> torchscript_incompatibility(const std::string& model_path, const TorchScriptArchive& archive,
                                                 const WorkerFacts& facts,
                                                 const std::unordered_set<std::string>& operators) {
  std::vector<const OperatorUse*> unknown;
  if (!operators.empty())
    for (const auto& use : archive.operators)
      if (!operators.count(use.name)) unknown.push_back(&use);
  const bool too_new = facts.file_format_max >= 0 && archive.format_version > facts.file_format_max;
  if (unknown.empty() && !too_new) return std::nullopt;

  std::string why;
  if (!unknown.empty()) {
    why = fmt::format("it calls {} ({}), which this worker's {} does not have", unknown.front()->name,
                      unknown.front()->where, facts.describe());
    if (unknown.size() > 1) {
      std::vector<std::string> rest;
      for (size_t i = 1; i < unknown.size() && i < 6; ++i) rest.push_back(unknown[i]->name);
      why += fmt::format(" ({} unknown operators in all; also {}{})", unknown.size(), str::join(rest, ", "),
                         unknown.size() > 6 ? ", …" : "");
    }
  } else {
    why = fmt::format("its file format {} is newer than the {} this worker's {} reads", archive.format_version,
                      facts.file_format_max, facts.describe());
  }
  const std::string mine = facts.torch_line == "python" ? "the PyTorch you scripted it with"
                                                        : "your PyTorch (2.x)";
  return Error(fmt::format("the TorchScript model '{}' cannot run in this mtrain-worker: it was saved by {}, and {}",
                           model_path, archive.saved_by(), why),
               fmt::format("build mtrain against {}: `{}` (then launch with that tree's mtrain), or script the "
                           "model with PyTorch {}",
                           mine, facts.build_against_python_command(), facts.libtorch))
      .at("model.path");
}

void check_torchscript_model(const std::string& model_path, const std::string& worker_path, bool trust_code) {
  const TorchScriptArchive archive = read_torchscript_archive(model_path);
  check_torchscript_trust(model_path, archive, trust_code);
  if (worker_path.empty()) return;
  const auto facts = read_worker_facts(worker_path);
  if (!facts) return;
  if (auto refusal = torchscript_incompatibility(model_path, archive, *facts, read_worker_operators(worker_path)))
    throw *refusal;
}

}  // namespace mtrain::launch

namespace mtrain::launch {

void check_trainer_files(const config::json& job, const std::string& worker_path) {
  if (config::model_from_text(config::get(job, "model.name").get<std::string>()) == config::ModelName::Torchscript)
    check_torchscript_model(config::get(job, "model.path").get<std::string>(), worker_path,
                            config::get(job, "model.trust_code").get<bool>());
}

}  // namespace mtrain::launch

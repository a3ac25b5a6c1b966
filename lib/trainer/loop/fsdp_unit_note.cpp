#include "lib/trainer/loop/fsdp_unit_note.hpp"

#include <fmt/format.h>

#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/trainer/model/torchscript.hpp"
#include "lib/trainer/strategy/wrap_policy.hpp"

namespace mtrain::trainer {

std::optional<std::string> single_fsdp_unit_note(const TrainJob& job, const TaskModel& model) {
  if (job.strategy != config::StrategyName::Fsdp || job.model.name != config::ModelName::Torchscript)
    return std::nullopt;
  ParamList p;
  for (const auto& np : model.named_parameters()) {
    p.names.push_back(np.key());
    p.numels.push_back(np.value().numel());
  }
  const auto& f = job.strat.fsdp;
  if (fsdp_units(p, f.wrap_policy, model.block_prefixes(), f.min_num_params).size() > 1) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& [name, n] : submodule_classes(model)) {
    if (names.size() == 12) {
      names.push_back("…");
      break;
    }
    names.push_back(n > 1 ? fmt::format("{} (x{})", visible_text(name), n) : visible_text(name));
  }
  int64_t numel = 0;
  for (int64_t n : p.numels) numel += n;
  const std::string why =
      f.wrap_policy == config::WrapPolicy::Size
          ? fmt::format("fsdp.wrap_policy size found no subtree of fsdp.min_num_params {}", f.min_num_params)
          : std::string("fsdp.wrap_module_types names no block of it");
  return fmt::format(
      "note: fsdp: the model is one unit ({}): all {} parameters are gathered at once, so FSDP saves no memory over "
      "ddp while the model computes. Name its blocks in fsdp.wrap_module_types (--set fsdp.wrap_module_types=CLASS); "
      "the module classes in {}: {}",
      why, numel, job.model.path,
      names.empty() ? std::string("none (the model has no submodules)") : str::join(names, ", "));
}

}  // namespace mtrain::trainer

#include "lib/trainer/loop/run_settings.hpp"

#include <fmt/format.h>

#include "lib/core/strings.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::trainer {

namespace {

constexpr const char* kRunSettings[] = {"model.name",      "model.path",       "data.name",  "data.path",
                                        "train.max_steps", "train.max_epochs", "train.seed", "optim.lr"};

}  // namespace

nlohmann::json run_settings(const nlohmann::json& settings) {
  nlohmann::json s = nlohmann::json::object();
  for (const char* key : kRunSettings) {
    const nlohmann::json* v = &settings;  // nested, every key present (a job made in code may have none)
    for (const auto& part : str::split(key, '.')) v = v && v->is_object() && v->contains(part) ? &v->at(part) : nullptr;
    if (v) s[key] = *v;
  }
  return s;
}

std::vector<std::string> changed_settings(const nlohmann::json& saved_state, const nlohmann::json& settings) {
  std::vector<std::string> out;
  const auto saved = saved_state.find("settings");
  if (saved == saved_state.end() || !saved->is_object()) return out;
  const nlohmann::json now = run_settings(settings);
  for (const char* key : kRunSettings) {
    const auto was = saved->find(key);
    if (was == saved->end() || !now.contains(key) || *was == now.at(key)) continue;
    out.push_back(fmt::format("{} {} (now {})", key, visible_text(was->dump()), visible_text(now.at(key).dump())));
  }
  return out;
}

nlohmann::json trainer_state(const TrainJob& job, const TrainerPosition& at) {
  return {{"step", at.step},
          {"total_steps", at.total},
          {"sampler",
           {{"epoch", at.step / at.steps_per_epoch},
            {"step_in_epoch", at.step % at.steps_per_epoch},
            {"steps_per_epoch", at.steps_per_epoch},
            {"batch_size", job.batch_size},
            {"grad_accum", job.grad_accum},
            {"seed", job.seed},
            {"shuffle", job.data.shuffle},
            {"drop_last", job.data.drop_last}}},
          {"rng", {{"kind", "cpu_generator"}, {"tensor", "rng/cpu"}, {"per_rank", true}}},
          {"last_loss", at.last_loss},
          {"optimizer", config::to_string(job.strat.optim.name)},
          {"settings", run_settings(job.settings)}};
}

}  // namespace mtrain::trainer

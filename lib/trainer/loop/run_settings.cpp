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

}  // namespace mtrain::trainer

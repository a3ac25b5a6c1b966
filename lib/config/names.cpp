#include "lib/config/names.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

// Not a row of the table: the launcher's request to choose one of its rows (names.hpp).
const char* const kStrategyAuto = "auto";

const std::vector<std::string>& strategy_choices() {
  static const std::vector<std::string> names = [] {
    auto n = choice_names<StrategyName>();
    n.emplace_back(kStrategyAuto);
    return n;
  }();
  return names;
}

bool is_auto_strategy(std::string_view name) { return name == kStrategyAuto; }

StrategyName strategy_from_text(std::string_view name, const std::string& key) {
  if (auto s = parse_choice<StrategyName>(name)) return *s;
  if (is_auto_strategy(name))
    throw Error("strategy 'auto' reached a program that needs a concrete strategy",
                "`mtrain launch --strategy auto` picks one before any rank starts; here name one of " +
                    str::join(choice_names<StrategyName>(), ", ") + " (`mtrain estimate` says which fit)")
        .at(key);
  throw unknown_choice(ChoiceTable<StrategyName>::what, name, choice_names<StrategyName>(), key);
}

ModelName model_from_text(std::string_view name, const std::string& key) {
  return choice_from_text<ModelName>(name, key);
}

int zero_stage(StrategyName s) {
  switch (s) {
    case StrategyName::Ddp: return 0;
    case StrategyName::Zero1: return 1;
    case StrategyName::Zero2: return 2;
    case StrategyName::Zero3: return 3;
    case StrategyName::Fsdp: return 0;
  }
  no_such_value(s);
}

bool is_zero(StrategyName s) { return zero_stage(s) > 0; }

std::optional<StrategyName> strategy_of_zero_stage(long long stage) {
  // Stage 0 is plain data parallelism; fsdp also has stage 0 but is not what DeepSpeed means.
  if (stage == 0) return StrategyName::Ddp;
  for (const auto& r : ChoiceTable<StrategyName>::rows)
    if (zero_stage(r.id) == stage) return r.id;
  return std::nullopt;
}

std::string strategy_text_of_zero_stage(long long stage) {
  const auto s = strategy_of_zero_stage(stage);
  return s ? to_string(*s) : fmt::format("zero{}", stage);
}

bool is_resnet(ModelName m) { return m == ModelName::Resnet18 || m == ModelName::Resnet50; }

}  // namespace mtrain::config

#include "mtrain/config/names.hpp"

#include <fmt/format.h>

#include "mtrain/config/choice_table.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain::config {

namespace {

struct StrategyRow {
  StrategyName id;
  const char* name;
  int zero_stage;
};
// The one strategy table.
constexpr StrategyRow kStrategies[] = {
    {StrategyName::Ddp, "ddp", 0},     {StrategyName::Zero1, "zero1", 1},
    {StrategyName::Zero2, "zero2", 2}, {StrategyName::Zero3, "zero3", 3},
    {StrategyName::Fsdp, "fsdp", 0},
};

// Not a row of the table: the launcher's request to choose one of its rows (names.hpp).
constexpr const char* kAutoName = "auto";

struct ModelRow {
  ModelName id;
  const char* name;
};
// The one model table.
constexpr ModelRow kModels[] = {
    {ModelName::Mlp, "mlp"},           {ModelName::Gpt, "gpt"},
    {ModelName::Resnet18, "resnet18"}, {ModelName::Resnet50, "resnet50"},
    {ModelName::Torchscript, "torchscript"},
};

template <class Row, size_t N>
std::vector<std::string> names_of(const Row (&rows)[N]) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.emplace_back(r.name);
  return out;
}

template <class Row, size_t N, class Id>
const Row& row_of(const Row (&rows)[N], Id id) {
  for (const auto& r : rows)
    if (r.id == id) return r;
  throw Error(fmt::format("name table has no row for enum value {}", static_cast<int>(id)), "",
              kExitFailure);
}

template <class Id, class Row, size_t N>
std::optional<Id> parse_of(const Row (&rows)[N], std::string_view name) {
  for (const auto& r : rows)
    if (name == r.name) return r.id;
  return std::nullopt;
}

}  // namespace

const std::vector<std::string>& strategy_names() {
  static const std::vector<std::string> names = names_of(kStrategies);
  return names;
}

const char* const kStrategyAuto = kAutoName;

const std::vector<std::string>& strategy_choices() {
  static const std::vector<std::string> names = [] {
    auto n = strategy_names();
    n.emplace_back(kAutoName);
    return n;
  }();
  return names;
}

bool is_auto_strategy(std::string_view name) { return name == kAutoName; }

const std::vector<std::string>& model_names() {
  static const std::vector<std::string> names = names_of(kModels);
  return names;
}

std::string to_string(StrategyName s) { return row_of(kStrategies, s).name; }
std::string to_string(ModelName m) { return row_of(kModels, m).name; }

std::optional<StrategyName> parse_strategy(std::string_view name) {
  return parse_of<StrategyName>(kStrategies, name);
}
std::optional<ModelName> parse_model(std::string_view name) { return parse_of<ModelName>(kModels, name); }

StrategyName strategy_from_text(std::string_view name, const std::string& key) {
  if (auto s = parse_strategy(name)) return *s;
  if (is_auto_strategy(name))
    throw Error("strategy 'auto' reached a program that needs a concrete strategy",
                "`mtrain launch --strategy auto` picks one before any rank starts; here name one of " +
                    str::join(strategy_names(), ", ") + " (`mtrain estimate` says which fit)")
        .at(key);
  throw unknown_choice("strategy", name, strategy_names(), key);
}

ModelName model_from_text(std::string_view name, const std::string& key) {
  if (auto m = parse_model(name)) return *m;
  throw unknown_choice("model", name, model_names(), key);
}

int zero_stage(StrategyName s) { return row_of(kStrategies, s).zero_stage; }
bool is_zero(StrategyName s) { return zero_stage(s) > 0; }

std::optional<StrategyName> strategy_of_zero_stage(long long stage) {
  if (stage == 0) return StrategyName::Ddp;
  for (const auto& r : kStrategies)
    if (r.zero_stage == stage) return r.id;
  return std::nullopt;
}

std::string strategy_text_of_zero_stage(long long stage) {
  const auto s = strategy_of_zero_stage(stage);
  return s ? to_string(*s) : fmt::format("zero{}", stage);
}

bool is_resnet(ModelName m) { return m == ModelName::Resnet18 || m == ModelName::Resnet50; }

}  // namespace mtrain::config

#pragma once
// The strategy and model names of a job, each an enum with ONE name table (choice_table.hpp),
// from which the registry's choices, parsing and printing come as for every other choice
// (choice_names<E>, parse_choice<E>, to_string). The ZeRO stage is a second lookup keyed by the
// strategy enum (names.cpp). The launcher's checks and the trainer compare enums, never the
// spelled names, so adding a strategy or a model is one table row plus the code that
// implements it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lib/config/choice_table.hpp"

namespace mtrain::config {

enum class StrategyName { Ddp, Zero1, Zero2, Zero3, Fsdp };
template <>
struct ChoiceTable<StrategyName> {
  static constexpr const char* what = "strategy";
  static constexpr ChoiceRow<StrategyName> rows[] = {{StrategyName::Ddp, "ddp"},
                                                     {StrategyName::Zero1, "zero1"},
                                                     {StrategyName::Zero2, "zero2"},
                                                     {StrategyName::Zero3, "zero3"},
                                                     {StrategyName::Fsdp, "fsdp"}};
};

enum class ModelName { Mlp, Gpt, Resnet18, Resnet50, Torchscript, Compiled };
template <>
struct ChoiceTable<ModelName> {
  static constexpr const char* what = "model";
  static constexpr ChoiceRow<ModelName> rows[] = {{ModelName::Mlp, "mlp"},
                                                  {ModelName::Gpt, "gpt"},
                                                  {ModelName::Resnet18, "resnet18"},
                                                  {ModelName::Resnet50, "resnet50"},
                                                  {ModelName::Torchscript, "torchscript"},
                                                  {ModelName::Compiled, "compiled"}};
};

// `auto` is no strategy: it asks the launcher to pick the fastest one that fits (lib/estimate)
// before any rank starts, so the trainer never sees it. strategy_choices() =
// choice_names<StrategyName>() + "auto", the registry's choices for `strategy`.
extern const char* const kStrategyAuto;
const std::vector<std::string>& strategy_choices();
bool is_auto_strategy(std::string_view name);

// choice_from_text at the keys these settings have; an unknown name throws mtrain::Error naming
// `key`, the value and the choices. `auto` is refused with the way to the launcher's choice.
StrategyName strategy_from_text(std::string_view name, const std::string& key = "strategy");
ModelName model_from_text(std::string_view name, const std::string& key = "model.name");

// ZeRO stage a strategy implies: 1-3 for zero1-3, 0 for ddp and fsdp.
int zero_stage(StrategyName s);
bool is_zero(StrategyName s);
// The strategy of a DeepSpeed zero_optimization.stage: 0 → ddp, 1-3 → zero1-3; nullopt otherwise.
std::optional<StrategyName> strategy_of_zero_stage(long long stage);
// Its name, or "zero<stage>" for a stage no strategy has, which the registry then rejects with
// the list of strategies (importers hand foreign values on to the registry's checks).
std::string strategy_text_of_zero_stage(long long stage);

// resnet18 and resnet50 (the image classifiers of the cifar10 data).
bool is_resnet(ModelName m);

}  // namespace mtrain::config

#pragma once
// The strategy and model names of a job, each as an enum with ONE name table (names.cpp) from
// which the registry's choices, parsing, printing and the ZeRO stage are all derived. The
// launcher's checks and the trainer compare enums, never the spelled names, so adding a
// strategy or a model is one table row plus the code that implements it.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mtrain::config {

enum class StrategyName { Ddp, Zero1, Zero2, Zero3, Fsdp };
enum class ModelName { Mlp, Gpt, Resnet18, Resnet50, Torchscript };

// The spelled names, in table order (the registry's choices for `model.name`; for `strategy`,
// strategy_choices()).
const std::vector<std::string>& strategy_names();
// `auto` is no strategy: it asks the launcher to pick the fastest one that fits (lib/estimate)
// before any rank starts, so the trainer never sees it. strategy_choices() = strategy_names()
// + "auto", the registry's choices for `strategy`.
extern const char* const kStrategyAuto;
const std::vector<std::string>& strategy_choices();
bool is_auto_strategy(std::string_view name);
const std::vector<std::string>& model_names();

std::string to_string(StrategyName s);
std::string to_string(ModelName m);

// nullopt for a name the table does not have (the caller words the error with its context).
std::optional<StrategyName> parse_strategy(std::string_view name);
std::optional<ModelName> parse_model(std::string_view name);
// As above, but an unknown name throws mtrain::Error naming `key`, the value and the choices.
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

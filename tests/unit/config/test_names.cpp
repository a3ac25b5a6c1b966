// Strategy and model names (lib/config/names.cpp): one ChoiceTable each, from which parsing,
// printing and the registry's choices come, and the ZeRO stage keyed by the strategy.
#include <catch2/catch.hpp>

#include "lib/config/names.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::config;

TEST_CASE("names: one table each for strategies and models", "[config][names]") {
  CHECK(choice_names<StrategyName>() == std::vector<std::string>{"ddp", "zero1", "zero2", "zero3", "fsdp"});
  CHECK(choice_names<ModelName>() ==
        std::vector<std::string>{"mlp", "gpt", "resnet18", "resnet50", "torchscript", "compiled"});
  for (const auto& n : choice_names<StrategyName>()) CHECK(to_string(strategy_from_text(n)) == n);
  for (const auto& n : choice_names<ModelName>()) CHECK(to_string(model_from_text(n)) == n);
  CHECK_FALSE(parse_choice<StrategyName>("zero").has_value());
  CHECK_FALSE(parse_choice<StrategyName>("DDP").has_value());  // names are spelled one way
  CHECK_FALSE(parse_choice<ModelName>("").has_value());
  CHECK(parse_choice<ModelName>("resnet50") == ModelName::Resnet50);
  CHECK_THROWS_WITH(strategy_from_text("zero9"), Catch::Contains("unknown strategy 'zero9'") && Catch::Contains("did you mean"));
  CHECK_THROWS_WITH(model_from_text("gtp", "bench.model"), Catch::Contains("bench.model") && Catch::Contains("unknown model 'gtp'"));
}

TEST_CASE("names: the ZeRO stage of a strategy and the strategy of a stage", "[config][names]") {
  const std::pair<StrategyName, int> stages[] = {{StrategyName::Ddp, 0},
                                                 {StrategyName::Zero1, 1},
                                                 {StrategyName::Zero2, 2},
                                                 {StrategyName::Zero3, 3},
                                                 {StrategyName::Fsdp, 0}};
  for (const auto& [s, stage] : stages) {
    INFO(to_string(s));
    CHECK(zero_stage(s) == stage);
    CHECK(is_zero(s) == (stage > 0));
  }
  CHECK(strategy_of_zero_stage(0) == StrategyName::Ddp);
  CHECK(strategy_of_zero_stage(3) == StrategyName::Zero3);
  CHECK_FALSE(strategy_of_zero_stage(4).has_value());
  CHECK_FALSE(strategy_of_zero_stage(-1).has_value());
  CHECK(strategy_text_of_zero_stage(2) == "zero2");
  CHECK(strategy_text_of_zero_stage(4) == "zero4");  // handed on to the registry's check
  CHECK_THROWS_WITH(zero_stage(static_cast<StrategyName>(42)), Catch::Contains("strategy name table"));
  CHECK(is_resnet(ModelName::Resnet18));
  CHECK(is_resnet(ModelName::Resnet50));
  CHECK_FALSE(is_resnet(ModelName::Gpt));
}

TEST_CASE("names: auto is a choice of the strategy setting, never a strategy", "[config][names]") {
  CHECK(strategy_choices() == std::vector<std::string>{"ddp", "zero1", "zero2", "zero3", "fsdp", "auto"});
  CHECK(is_auto_strategy(kStrategyAuto));
  CHECK_FALSE(is_auto_strategy("ddp"));
  CHECK_FALSE(parse_choice<StrategyName>("auto").has_value());
  // What reaches a program that needs a concrete strategy (the trainer) is refused with the way out.
  CHECK_THROWS_WITH(strategy_from_text("auto"), Catch::Contains("strategy 'auto'") && Catch::Contains("mtrain launch --strategy auto"));
}

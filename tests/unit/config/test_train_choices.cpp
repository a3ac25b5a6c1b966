// The training loop's choice settings (lib/config/train_choices.hpp): one name table each.
#include <catch2/catch.hpp>

#include "choice_checks.hpp"
#include "lib/config/train_choices.hpp"

using namespace mtrain::config;
using mtrain::testing::check_choice_table;

TEST_CASE("train choices: train.precision", "[config][choices]") {
  check_choice_table<Precision>("train.precision", {Precision::Fp32, Precision::Bf16, Precision::Fp16});
  CHECK(choice_names<Precision>() == std::vector<std::string>{"fp32", "bf16", "fp16"});
  CHECK_FALSE(is_mixed(Precision::Fp32));
  CHECK(is_mixed(Precision::Bf16));
  CHECK(is_mixed(Precision::Fp16));
}

TEST_CASE("train choices: optim.name", "[config][choices]") {
  check_choice_table<OptimizerName>("optim.name", {OptimizerName::Adamw, OptimizerName::Sgd});
}

TEST_CASE("train choices: sched.name", "[config][choices]") {
  check_choice_table<ScheduleName>(
      "sched.name", {ScheduleName::Constant, ScheduleName::Cosine, ScheduleName::Step, ScheduleName::Linear});
}

TEST_CASE("train choices: data.name", "[config][choices]") {
  check_choice_table<DataName>("data.name", {DataName::Auto, DataName::Synthetic, DataName::Text, DataName::Cifar10,
                                             DataName::Tokens, DataName::Tensors});
}

TEST_CASE("train choices: model.loss", "[config][choices]") {
  check_choice_table<LossName>("model.loss",
                               {LossName::Auto, LossName::CrossEntropy, LossName::Mse, LossName::LmCrossEntropy});
}

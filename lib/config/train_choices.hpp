#pragma once
// The choices of the training loop's settings, each an enum with ONE name table
// (choice_table.hpp): train.precision, optim.name, sched.name, data.name and model.loss.
#include "lib/config/choice_table.hpp"

namespace mtrain::config {

enum class Precision { Fp32, Bf16, Fp16 };
template <>
struct ChoiceTable<Precision> {
  static constexpr const char* what = "precision";
  static constexpr ChoiceRow<Precision> rows[] = {
      {Precision::Fp32, "fp32"}, {Precision::Bf16, "bf16"}, {Precision::Fp16, "fp16"}};
};
// bf16 and fp16: mixed precision with fp32 master weights.
inline bool is_mixed(Precision p) { return p != Precision::Fp32; }

enum class OptimizerName { Adamw, Sgd };
template <>
struct ChoiceTable<OptimizerName> {
  static constexpr const char* what = "optimiser";
  static constexpr ChoiceRow<OptimizerName> rows[] = {{OptimizerName::Adamw, "adamw"}, {OptimizerName::Sgd, "sgd"}};
};

enum class ScheduleName { Constant, Cosine, Step, Linear };
template <>
struct ChoiceTable<ScheduleName> {
  static constexpr const char* what = "schedule";
  static constexpr ChoiceRow<ScheduleName> rows[] = {{ScheduleName::Constant, "constant"},
                                                     {ScheduleName::Cosine, "cosine"},
                                                     {ScheduleName::Step, "step"},
                                                     {ScheduleName::Linear, "linear"}};
};

// Auto is the setting's request to pick by model (data_checks.hpp effective_data_name); the
// trainer only ever holds a resolved name.
enum class DataName { Auto, Synthetic, Text, Cifar10, Tokens, Tensors };
template <>
struct ChoiceTable<DataName> {
  static constexpr const char* what = "dataset";
  static constexpr ChoiceRow<DataName> rows[] = {
      {DataName::Auto, "auto"},       {DataName::Synthetic, "synthetic"}, {DataName::Text, "text"},
      {DataName::Cifar10, "cifar10"}, {DataName::Tokens, "tokens"},       {DataName::Tensors, "tensors"}};
};

// torchscript models' loss; Auto: the module's own exported loss method.
enum class LossName { Auto, CrossEntropy, Mse, LmCrossEntropy };
template <>
struct ChoiceTable<LossName> {
  static constexpr const char* what = "loss";
  static constexpr ChoiceRow<LossName> rows[] = {{LossName::Auto, "auto"},
                                                 {LossName::CrossEntropy, "cross_entropy"},
                                                 {LossName::Mse, "mse"},
                                                 {LossName::LmCrossEntropy, "lm_cross_entropy"}};
};

}  // namespace mtrain::config

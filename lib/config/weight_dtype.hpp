#pragma once
// The dtype `mtrain checkpoint consolidate --dtype` writes floating tensors in: ONE name table
// for the launcher's flag and the worker that converts (lib/trainer/checkpoint/consolidate.cpp),
// PyTorch's names as alias rows.
#include "lib/config/choice_table.hpp"

namespace mtrain::config {

enum class WeightDtype { Fp32, Bf16, Fp16 };
template <>
struct ChoiceTable<WeightDtype> {
  static constexpr const char* what = "dtype";
  static constexpr ChoiceRow<WeightDtype> rows[] = {{WeightDtype::Fp32, "fp32"},     {WeightDtype::Bf16, "bf16"},
                                                    {WeightDtype::Fp16, "fp16"},     {WeightDtype::Fp32, "float32"},
                                                    {WeightDtype::Bf16, "bfloat16"}, {WeightDtype::Fp16, "float16"}};
};

}  // namespace mtrain::config

#pragma once
// The file `mtrain checkpoint consolidate --format` writes: ONE name table for the launcher's flag
// and the worker that writes it (lib/trainer/checkpoint/consolidate.cpp).
#include "lib/config/choice_table.hpp"

namespace mtrain::config {

// Pt: a torch.load-able state dict; Safetensors: a .safetensors file; Hf: a folder Hugging Face's
// from_pretrained reads (model.safetensors and config.json).
enum class WeightFormat { Pt, Safetensors, Hf };
template <>
struct ChoiceTable<WeightFormat> {
  static constexpr const char* what = "format";
  static constexpr ChoiceRow<WeightFormat> rows[] = {
      {WeightFormat::Pt, "pt"}, {WeightFormat::Safetensors, "safetensors"}, {WeightFormat::Hf, "hf"}};
};

}  // namespace mtrain::config

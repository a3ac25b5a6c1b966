#pragma once
// Names the DeepSpeed and accelerate importers (import_*.cpp) and exporters (export.cpp) share:
// each correspondence is written once, so import and export cannot drift apart.
#include <string>

namespace mtrain::config::foreign {

struct KeyPair {
  const char* foreign;  // the other tool's name
  const char* key;      // the mtrain setting or value
};

// ds_config.json zero_optimization.<foreign> ↔ setting; values as they are.
inline constexpr KeyPair kZeroKeys[] = {
    {"allgather_bucket_size", "zero.allgather_bucket_size"},
    {"reduce_bucket_size", "zero.reduce_bucket_size"},
    {"overlap_comm", "zero.overlap_comm"},
    {"contiguous_gradients", "zero.contiguous_gradients"},
    {"stage3_prefetch_bucket_size", "zero.stage3_prefetch_bucket_size"},
    {"stage3_param_persistence_threshold", "zero.stage3_param_persistence_threshold"},
    {"stage3_max_live_parameters", "zero.stage3_max_live_parameters"},
    {"stage3_max_reuse_distance", "zero.stage3_max_reuse_distance"},
    {"stage3_gather_16bit_weights_on_model_save", "zero.stage3_gather_16bit_weights_on_model_save"},
};

// ds_config.json fp16.<foreign> ↔ precision.* (loss scaling).
inline constexpr KeyPair kFp16Keys[] = {
    {"loss_scale", "precision.loss_scale"},
    {"initial_scale_power", "precision.initial_scale_power"},
    {"loss_scale_window", "precision.loss_scale_window"},
    {"hysteresis", "precision.hysteresis"},
    {"min_loss_scale", "precision.min_loss_scale"},
};

// accelerate's fsdp_auto_wrap_policy ↔ fsdp.wrap_policy.
inline constexpr KeyPair kWrapPolicies[] = {
    {"TRANSFORMER_BASED_WRAP", "layer"},
    {"SIZE_BASED_WRAP", "size"},
    {"NO_WRAP", "none"},
};

// accelerate's fsdp_backward_prefetch ↔ fsdp.backward_prefetch (the other names are torch's own).
inline constexpr KeyPair kPrefetch[] = {{"NO_PREFETCH", "NONE"}};

// The pair's mtrain side for a foreign name, or the name itself when no pair has it.
template <size_t N>
std::string to_mtrain(const KeyPair (&pairs)[N], const std::string& foreign_name) {
  for (const auto& p : pairs)
    if (foreign_name == p.foreign) return p.key;
  return foreign_name;
}

// The pair's foreign side for an mtrain value, or the value itself.
template <size_t N>
std::string to_foreign(const KeyPair (&pairs)[N], const std::string& mtrain_value) {
  for (const auto& p : pairs)
    if (mtrain_value == p.key) return p.foreign;
  return mtrain_value;
}

}  // namespace mtrain::config::foreign

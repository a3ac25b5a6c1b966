#pragma once
// Mixed-precision policy (train.precision), as torch FSDP's MixedPrecision names it:
//   param  — dtype the model computes with (the gathered / replicated parameters);
//   reduce — dtype gradients are reduced and kept in (the same as param: docs/architecture.md §6
//            counts 2-byte gradients for bf16);
//   buffer — module buffers (BatchNorm statistics) stay fp32.
// The optimiser always updates an fp32 master copy of this rank's shard; fp16 adds dynamic loss
// scaling (optim/loss_scale.hpp).
#include <string>

#include <ATen/ATen.h>

namespace mtrain::trainer {

struct PrecisionPolicy {
  std::string name = "fp32";
  at::ScalarType param = at::kFloat;
  at::ScalarType reduce = at::kFloat;
  at::ScalarType buffer = at::kFloat;
  bool loss_scaling = false;
};

// Throws mtrain::Error for anything but fp32 | bf16 | fp16.
PrecisionPolicy precision_policy(const std::string& name);

}  // namespace mtrain::trainer

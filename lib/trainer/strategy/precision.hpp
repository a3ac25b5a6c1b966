#pragma once
// Mixed-precision policy (train.precision), as torch FSDP's MixedPrecision names it:
//   param  — dtype the model computes with (the gathered / replicated parameters);
//   reduce — dtype gradients are reduced and kept in (the same as param: docs/architecture.md §6
//            counts 2-byte gradients for bf16);
//   buffer — module buffers (BatchNorm statistics) stay fp32.
// The optimiser always updates an fp32 master copy of this rank's shard; fp16 adds dynamic loss
// scaling (optim/loss_scale.hpp).
#include <ATen/ATen.h>

#include "lib/config/train_choices.hpp"

namespace mtrain::trainer {

struct PrecisionPolicy {
  config::Precision name = config::Precision::Fp32;
  at::ScalarType param = at::kFloat;
  at::ScalarType reduce = at::kFloat;
  at::ScalarType buffer = at::kFloat;
  bool loss_scaling = false;
};

PrecisionPolicy precision_policy(config::Precision name);

}  // namespace mtrain::trainer

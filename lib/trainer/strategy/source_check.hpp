#pragma once
// The one check every strategy makes before reading a logical tensor back from a checkpoint:
// it exists there and has the model's shape (a different model or optimiser otherwise).
#include <string>

#include <ATen/ATen.h>

#include "lib/trainer/strategy/strategy.hpp"

namespace mtrain::trainer {

// Throws mtrain::Error naming the tensor and saying which settings to keep.
void require_source_tensor(const TensorSource& src, const std::string& name, at::IntArrayRef shape);

}  // namespace mtrain::trainer

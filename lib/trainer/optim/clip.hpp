#pragma once
// Gradient clipping by global L2 norm, as torch.nn.utils.clip_grad_norm_: scale every gradient
// by max_norm / (norm + 1e-6) when that is below 1.
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

class Communicator;

// Squared L2 norm over the buffers. `sum_over` (may be null) adds the squares over ranks:
// pass it when each rank holds a different piece of the gradients (ZeRO), not for DDP.
double global_grad_norm(const std::vector<at::Tensor>& grads, Communicator* sum_over);
// Clips in place when max_norm > 0; returns the norm before clipping.
double clip_grad_norm(const std::vector<at::Tensor>& grads, double max_norm,
                      Communicator* sum_over);

}  // namespace mtrain::trainer

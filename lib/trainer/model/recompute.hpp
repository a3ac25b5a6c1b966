#pragma once
// Activation checkpointing: run a block so that none of its inner activations are kept for
// backward, and recompute them when backward reaches the block.
//
// Protocol (a custom torch::autograd::Function):
//   forward:  save the RNG state (CPU, and the input's CUDA device) and the input; run the block
//             under no-grad, so autograd records nothing inside it; return its output.
//   backward: snapshot the block's buffers (BatchNorm running statistics, which the recompute
//             would otherwise update a second time); restore the saved RNG state so dropout
//             draws the same masks (the current state is put back afterwards); re-run the block
//             with grad enabled on a detached copy of the input; backprop the incoming gradient
//             through it, which accumulates the parameters' gradients (firing their hooks, as a
//             plain backward would) and yields the input's gradient; then put the buffers back
//             (only after the inner backward, which reads them).
// Gradients equal the plain block's exactly when the block is deterministic given its RNG
// state. The input must require grad (it does for every block after an embedding or a stem
// with parameters), else autograd never calls backward and the block's parameters get no grads.
#include <functional>

#include <ATen/ATen.h>
#include <torch/nn/module.h>

namespace mtrain::trainer {

using BlockFn = std::function<at::Tensor(const at::Tensor&)>;

// `block` (may be null) is the module whose buffers are restored after the recompute.
at::Tensor run_checkpointed(BlockFn fn, const at::Tensor& input,
                            std::shared_ptr<torch::nn::Module> block);

}  // namespace mtrain::trainer

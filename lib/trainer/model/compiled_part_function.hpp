#pragma once
// One part of a compiled model — the prologue, a unit (a block: what FSDP and ZeRO-3 gather as
// one) or the epilogue — as one node of the autograd graph. Its forward runs the part's forward
// program; its backward runs the part's backward program, which recomputes the part from its
// saved inputs (recompute-in-backward: python/mtrain_export) and returns the gradients of its
// hidden-state input and of its parameters. The parameters are inputs of the node, so autograd
// accumulates their gradients into .grad (and the strategies' gradient hooks fire) as for any
// module; each program call announces them to the sharded engine (loaded_program.hpp), which
// gathers the unit before its forward and again before its backward.
//
// Calling conventions (core/compiled_manifest.hpp), `inputs` = the part's args in manifest order
// and, for a unit, the hidden state last:
//   prologue: forward(inputs) -> hidden;  backward(inputs, grad) -> grads
//   unit:     forward(inputs) -> hidden;  backward(inputs, grad) -> (grad_hidden, grads)
//   epilogue: forward(inputs) -> loss;    step(inputs) -> (loss, grad_hidden, grads), times grad
#include <cstddef>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "lib/trainer/model/loaded_program.hpp"

namespace mtrain::trainer {

struct CompiledStage {
  enum class Kind { Prologue, Unit, Epilogue };
  Kind kind = Kind::Unit;
  std::string label;  // "prologue", "unit blocks.0", "epilogue"
  LoadedProgram forward;
  LoadedProgram backward;
  // Per input: which output of the backward program is its gradient (kNoGrad: none — the batch's
  // ids, a frozen parameter, a buffer).
  std::vector<size_t> grad_of_input;
  static constexpr size_t kNoGrad = static_cast<size_t>(-1);
};

// The part's output (the hidden state, or the loss for the epilogue), recorded for autograd when
// grad mode is on and an input requires grad.
at::Tensor run_compiled_part(const CompiledStage& part, const std::vector<at::Tensor>& inputs);

}  // namespace mtrain::trainer

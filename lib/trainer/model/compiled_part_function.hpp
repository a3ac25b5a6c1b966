#pragma once
// One part of a compiled model — the prologue, a unit (a block: what FSDP and ZeRO-3 gather as
// one) or the epilogue — as one node of the autograd graph. A unit's forward runs its forward
// program, which also returns the activations its backward program takes (python/mtrain_export:
// the partition torch.compile makes), kept in the node until its backward; the backward returns
// the gradients of its hidden-state input and of its parameters. The prologue's backward
// recomputes it (an embedding lookup); in training the epilogue runs its step program in the
// forward, which gives the loss and the epilogue's gradients at once, and the node's backward
// hands those on. The parameters are inputs of the node, so autograd
// accumulates their gradients into .grad (and the strategies' gradient hooks fire) as for any
// module; each program call announces them to the sharded engine (loaded_program.hpp), which
// gathers the unit before its forward and again before its backward.
//
// Calling conventions (core/compiled_manifest.hpp), `inputs` = the part's args in manifest order
// and, for a unit, the hidden state last:
//   prologue: forward(inputs) -> hidden;  backward(inputs, grad) -> grads
//   unit:     forward(inputs) -> (hidden, saved);  backward(inputs, saved, grad) -> (grad_hidden, grads)
//   epilogue: forward(inputs) -> loss (evaluation);  step(inputs) -> (loss, grad_hidden, grads), times grad
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
// grad mode is on and an input requires grad (then the epilogue runs its step program, and a
// unit keeps its activations; else the forward programs alone run).
at::Tensor run_compiled_part(const CompiledStage& part, const std::vector<at::Tensor>& inputs);

}  // namespace mtrain::trainer

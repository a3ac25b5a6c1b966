#pragma once
// A traced model with dropout (p > 0) or BatchNorm: torch.jit.trace records each such layer's
// training/evaluation mode as a constant (traced_module.hpp), so one file cannot both train
// (dropout applied, BatchNorm statistics updated) and validate (neither). The pair is the way:
// model.path, the module traced after model.train(), and model.eval_path, the same module traced
// after model.eval(). The trainer trains with the first and validates with the second, whose
// parameters and buffers are bound to the first's very tensors (bind_eval_trace), so every
// strategy's in-place changes (sharding, devices, the optimizer's steps) reach both and
// checkpoints hold one set of weights.
#include <string>

#include <torch/csrc/jit/api/module.h>

#include "lib/trainer/model/traced_module.hpp"

namespace mtrain::trainer {

struct ModelFile {
  std::string path;
  const torch::jit::Module& module;
  TraceFacts facts;
};

// Refuses (mtrain::Error, one paragraph) what would act wrongly in one of the two phases. Without
// `eval` (model.eval_path empty): a trace that froze a mode, the paragraph showing how to make the
// pair. With it: a model.path frozen in eval mode, a model.eval_path frozen in train mode, and two
// files that are not traces of one module — parameters or buffers that differ in name, shape or
// dtype, or a loss method in one only. Used by the worker before it trains and by
// `mtrain-worker model-check`, which the launcher runs before any rank starts.
void check_trace_pair(const ModelFile& train, const ModelFile* eval);

// Points each parameter and buffer slot of `eval` at the tensor `train` holds under the same name
// (check_trace_pair has found the names, shapes and dtypes equal).
void bind_eval_trace(torch::jit::Module& eval, const torch::jit::Module& train);

}  // namespace mtrain::trainer

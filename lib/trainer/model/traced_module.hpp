#pragma once
// Whether a loaded TorchScript module was made by torch.jit.trace rather than torch.jit.script,
// and which of its operators had their training/evaluation behaviour frozen in by the trace.
//
// How a traced module is told apart (LibTorch 1.13 and 2.x, from the file alone): torch.jit.save
// keeps each node's original source range (the archive's .debug_pkl files). A scripted node's is
// the user's Python source ("File "net.py", line 7"); a traced node's is the Python call stack
// the tracer recorded, which always passes through torch/jit/_trace.py ("…/_trace.py(976):
// trace_module"). A file saved without debug information is not recognised (reported as
// scripted).
//
// What the trace froze: dropout and batch/instance norm take `training` as an argument; a
// scripted module passes self.training, a trace records the value it had while tracing as a
// constant, so train()/eval() no longer change what these layers do. A dropout whose p is the
// constant 0 is the identity in both modes and is not counted (issue 44: GPT-2 and BERT configs
// for fine-tuning have every dropout at 0.0); BatchNorm and any other dropout are.
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>

namespace mtrain::trainer {

struct TraceFacts {
  bool traced = false;
  // "aten::batch_norm (training=true)": mode-dependent operators with a constant mode.
  std::vector<std::string> frozen_mode_ops;
};

TraceFacts trace_facts(const torch::jit::Module& m);

// trace_facts(m).frozen_mode_ops: what makes a traced module train wrongly in one of its two
// phases, empty when none does (or the module was scripted). The predicate both the trainer's
// model loading and a launcher-side model check use.
std::vector<std::string> frozen_mode_ops(const torch::jit::Module& m);

}  // namespace mtrain::trainer

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
// for fine-tuning have every dropout at 0.0); BatchNorm and any other dropout are, by the mode the
// trace recorded: a trace made in train mode cannot validate, one made in eval mode cannot train,
// and a pair of them can (trace_pair.hpp).
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>

namespace mtrain::trainer {

struct TraceFacts {
  bool traced = false;
  // Mode-dependent operators ("aten::dropout", once per use) whose `training` argument the trace
  // recorded as the constant true, resp. false. Both empty for a scripted module.
  std::vector<std::string> frozen_training;
  std::vector<std::string> frozen_eval;

  bool any_frozen() const { return !frozen_training.empty() || !frozen_eval.empty(); }
  // "aten::dropout (training=true) x3, aten::batch_norm (training=true)": for messages.
  std::string describe_frozen() const;
};

// The predicate both the trainer's model loading and the launcher-side model check
// (`mtrain-worker model-check`) use.
TraceFacts trace_facts(const torch::jit::Module& m);

}  // namespace mtrain::trainer

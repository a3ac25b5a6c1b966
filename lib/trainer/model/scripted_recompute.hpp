#pragma once
// Activation checkpointing inside a TorchScript model: the selected submodules (the blocks) run
// through run_checkpointed (recompute.hpp) although their callers are TorchScript code.
//
// How. A scripted parent calls a block as `prim::CallMethod[name="forward"](%block, %x)`. Before
// the module first runs, every such call site whose callee has the class of a selected block is
// rewritten, in the method graphs the interpreter compiles from (Method::graph(); LibTorch inlines
// callees only when it first builds a method's executable graph, and an operator is never
// inlined), into `mtrain::checkpoint_call(%block, %x)`, an operator registered by this file. Its
// kernel looks the block object up in a table of the selected instances (a class shared by a
// selected and an unselected instance is rewritten too: the table decides per object) and either
// calls the block's forward plainly or through run_checkpointed, with the block's mirror
// nn::Module so that BatchNorm statistics are restored after the recompute. Blocks whose input
// does not require grad run plainly: the checkpoint Function would never be differentiated
// and their parameters would get no gradient.
//
// The rewritten graphs are the module's own, so torch.jit.save of the module would write the
// operator into the file; with_plain_calls() puts the CallMethod nodes back while saving.
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/nn/module.h>

namespace mtrain::trainer {

struct RecomputedBlock {
  torch::jit::Module module;                  // the jit submodule
  std::shared_ptr<torch::nn::Module> mirror;  // its mirror (the same buffer tensors)
};

class ScriptedRecompute {
 public:
  // `active` is asked at every call: true → checkpoint (training, autograd on, setting on).
  ScriptedRecompute(torch::jit::Module root, std::vector<RecomputedBlock> blocks,
                    std::function<bool()> active);
  ~ScriptedRecompute();
  ScriptedRecompute(const ScriptedRecompute&) = delete;
  ScriptedRecompute& operator=(const ScriptedRecompute&) = delete;

  // Call sites rewritten (for tests and the log).
  size_t call_sites() const { return sites_; }
  // Runs `fn` with the original CallMethod call sites in place (torch.jit.save of the module).
  void with_plain_calls(const std::function<void()>& fn);

 private:
  torch::jit::Module root_;
  std::vector<RecomputedBlock> blocks_;
  std::shared_ptr<std::function<bool()>> active_;
  size_t sites_ = 0;
};

}  // namespace mtrain::trainer

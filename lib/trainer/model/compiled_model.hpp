#pragma once
// model.name compiled: the user's nn.Module exported with torch.export and compiled ahead of time
// by AOTInductor (python/mtrain_export writes the package: manifest.json, model.safetensors,
// programs/*.pt2; core/compiled_manifest.hpp reads the manifest). No Python in the ranks.
//
// The parameters are real tensors registered under the package's tensor-table names in a tree
// of plain modules ("blocks.0.attn.c_attn.weight"), a tied group one tensor under each of its
// names, in the table's (state_dict) order — so every strategy, checkpoint, model.init and the
// PyTorch outputs see an ordinary module. The loss runs prologue → one autograd node per unit →
// epilogue (compiled_part_function.hpp); the units are block_prefixes(), which FSDP and ZeRO-3
// gather whole. A .pt2 holds a compiled shared library: loading one runs native code, so the
// package is refused without model.trust_code; and it needs the LibTorch 2.x line (1.13 has no
// loader).
#include <string>

#include "lib/core/compiled_manifest.hpp"
#include "lib/trainer/checkpoint/init_weights.hpp"
#include "lib/trainer/model/model.hpp"

namespace mtrain::trainer {

bool is_compiled_model(const TaskModel& model);

// The package's tensors as a state dict lists them (parameters, then buffers; tied names marked):
// what model.init is compared with, before any program is loaded.
std::vector<NamedShape> compiled_layout(const CompiledManifest& m);

// What `mtrain-worker model-check --compiled` checks before any rank starts, loading no program:
// the manifest (every program file present), the PyTorch release it was compiled by against this
// worker's, that this worker can run compiled programs at all, and — when `init` is not empty —
// that model.init's names and shapes match the table. Throws mtrain::Error (exit 2).
void check_compiled_package(const std::string& dir, const std::string& init, bool init_strict);

}  // namespace mtrain::trainer

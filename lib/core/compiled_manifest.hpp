#pragma once
// The manifest of a compiled-model package (model.name=compiled, issue 47), read into types once.
// The package is what `python -m mtrain_export` writes (python/mtrain_export/package.py):
// manifest.json, model.safetensors and programs/*.pt2, AOTInductor-compiled programs. No torch
// here: the launcher refuses a package compiled for another PyTorch or device, or one whose
// manifest is damaged, before any rank starts; the worker reads the same types.
//
// The manifest is untrusted input (a downloaded package): bounded read and parse, every field's
// type checked, every name a program takes found in the tensor table or the inputs, every
// program file a regular file inside the package's programs/ folder. Loading a program runs
// native code, so whether to load one at all is model.trust_code's decision, not this reader's.
//
// The shapes here are what a program may be given, and nothing else checks them: LibTorch 2.15's
// AOTIModelPackageLoader::run checks neither shapes nor strides (measured: a [3, 8, 16] hidden
// state given to a unit program compiled for [6, 8, 16] ran and returned [6, 8, 16], reading past
// its input; a transposed, non-contiguous input gave wrong numbers without an error). The caller
// of a program checks every argument's shape, dtype, device and contiguity against this table.
#include <cstdint>
#include <string>
#include <vector>

namespace mtrain {

struct CompiledTensor {
  std::string name;  // state_dict name (the first of a tied group)
  bool parameter = true;  // else a buffer
  std::vector<int64_t> shape;
  std::string dtype;  // "float32", "int64", … (torch's name without "torch.")
  bool requires_grad = true;
  bool persistent = true;  // in model.safetensors (non-persistent buffers are not)
  std::vector<std::string> tied;  // the other names of the same tensor
};

struct CompiledInput {
  std::string name;  // "input", "target"
  std::string dtype;
  std::vector<int64_t> shape;  // the example's: the programs are compiled for it
};

struct CompiledProgram {
  std::string file;  // path inside the package: "programs/<stem>.pt2"
  std::string key;  // the exporter's cache key (graph, shapes, torch, device)
};

// An activation a unit's forward program returns for its backward program.
struct CompiledActivation {
  std::string dtype;
  std::vector<int64_t> shape;
};

// Part of the model as programs. args: the names the programs take, in order (tensor-table
// names, input names, and "hidden" for the hidden state); grads: the tensor-table names whose
// gradients the backward program returns after its own leading outputs; saved: a unit's
// activations, which its forward returns after the hidden state and its backward takes.
//  prologue: forward(args) -> hidden; backward(args, grad_hidden) -> grads
//  unit:     forward(args, hidden) -> (hidden, saved);
//            backward(args, hidden, saved, grad_out) -> (grad_hidden, grads)
//  epilogue: forward(args) -> loss; backward = step(args) -> (loss, grad_hidden, grads)
struct CompiledPart {
  std::string name;  // unit: its dotted module name; else "prologue" / "epilogue"
  std::string type;  // unit: its class name
  std::vector<std::string> args;
  std::vector<std::string> grads;
  std::vector<CompiledActivation> saved;
  CompiledProgram forward;
  CompiledProgram backward;
};

struct CompiledManifest {
  std::string dir;
  int format_version = 0;
  std::string torch_version;  // as torch.__version__ printed it: "2.15.0+cu132"
  std::string device;  // "cpu", "cuda"
  std::vector<CompiledInput> inputs;
  std::vector<int64_t> hidden_shape;
  std::string hidden_dtype;
  std::vector<CompiledTensor> tensors;
  CompiledPart prologue;
  std::vector<CompiledPart> units;
  CompiledPart epilogue;
};

// The package in folder `dir`; mtrain::Error (exit 2) naming dir/manifest.json and the field.
CompiledManifest read_compiled_manifest(const std::string& dir);

// Refuses a package compiled by another PyTorch release (major.minor.patch) or for another
// device type than the worker's.
void check_compiled_target(const CompiledManifest& m, const std::string& worker_torch_version,
                           const std::string& worker_device);

}  // namespace mtrain

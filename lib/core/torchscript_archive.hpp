#pragma once
// What a TorchScript archive (torch.jit.save) says about itself, read without running it: which
// records it has, which PyTorch line wrote it, and which operators its code calls. The launcher
// uses it to refuse, before any rank starts, a model the worker's LibTorch cannot run
// (docs/architecture.md §9), instead of a rank failing in torch::jit::load.
//
// The archive is a zip whose records sit under one folder (<prefix>/): data.pkl, constants.pkl,
// version (the file-format version, 3 and up), code/**.py (the TorchScript source PyTorch prints:
// an aten operator is written `torch.<name>(…)`, any other namespace `ops.<ns>.<name>(…)`), and
// since PyTorch 2.x also `byteorder` and `.data/serialization_id`, which 1.13 never writes.
#include <cstdint>
#include <string>
#include <vector>

#include "mtrain/core/zip_reader.hpp"

namespace mtrain {

struct OperatorUse {
  std::string name;   // qualified: "aten::scaled_dot_product_attention"
  std::string where;  // "code/__torch__/model.py:12"
};

// A `__setstate__` method: it runs inside torch::jit::load, before anything else of the model.
struct SetStateMethod {
  std::string where;               // "code/__torch__.py:18"
  std::vector<OperatorUse> calls;  // the operators its body calls
};

struct TorchScriptArchive {
  std::string prefix;             // the records' folder ("net")
  int64_t format_version = -1;    // <prefix>/version; -1 when absent
  bool has_byteorder = false;     // written by PyTorch 2.x
  std::vector<OperatorUse> operators;  // each operator once, in order of first use
  std::vector<SetStateMethod> setstates;
  // "PyTorch 2.x (file format 3, byteorder record)" / "PyTorch 1.x (file format 3)".
  std::string saved_by() const;
};

// Operators called in one TorchScript code file, in order of first use (pure; `file` names it
// in OperatorUse::where). A name after `__torch__.` or another `.` is a compiled function or an
// attribute, not an operator, and is skipped.
std::vector<OperatorUse> operators_in_code(const std::string& code, const std::string& file);

// The `def __setstate__(` methods of one code file with the operators each body calls (pure).
std::vector<SetStateMethod> setstate_methods(const std::string& code, const std::string& file);

// The most one record (a code file, the version) may hold once inflated: TorchScript source is
// kilobytes per module, and a deflated record is inflated into memory whole.
inline constexpr uint64_t kMaxTorchScriptRecord = 64ull << 20;

// Reads `path` (zip_reader.hpp: every size checked, deflated records inflated within
// kMaxTorchScriptRecord, nothing executed). Throws mtrain::Error naming the file when it is not a
// TorchScript archive (no code/ records: e.g. a torch.save state dict) or its zip is damaged.
TorchScriptArchive read_torchscript_archive(const std::string& path);
// The same over an open archive (a file, or bytes in memory: the fuzz target).
TorchScriptArchive scan_torchscript_archive(ZipReader& zip);

}  // namespace mtrain

#pragma once
// What a TorchScript archive (torch.jit.save) holds, read without running it: which PyTorch line
// wrote it, and the text of every record LibTorch's loader could compile as code. The launcher and
// the worker hand that text to LibTorch's own TorchScript parser (trainer/model/
// torchscript_code_check.hpp) to decide trust and compatibility; nothing here reads the code.
//
// The archive is a zip whose records sit under one folder (<prefix>/): data.pkl, constants.pkl,
// version (the file-format version, 3 and up), code/**.py (the TorchScript source PyTorch prints),
// and since PyTorch 2.x also `byteorder` and `.data/serialization_id`, which 1.13 never writes.
//
// LibTorch's reader (PyTorchStreamReader over miniz) finds a record by name case-insensitively:
// asked for `code/__torch__.py` it serves `CODE/__torch__.PY`. So a code record is any record whose
// name, ASCII case folded, is `code/….py`, and an archive with two records whose names fold to the
// same name is refused: which of them LibTorch would read is not ours to guess.
#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/zip_reader.hpp"

namespace mtrain {

// One record LibTorch could compile as TorchScript source.
struct CodeRecord {
  std::string name;  // as stored, relative to the prefix: "code/__torch__/model.py"
  std::string text;
};

struct TorchScriptArchive {
  std::string prefix;             // the records' folder ("net")
  int64_t format_version = -1;    // <prefix>/version; -1 when absent
  bool has_byteorder = false;     // written by PyTorch 2.x
  std::vector<CodeRecord> code;   // every code record, in directory order
  // "PyTorch 2.x (file format 3, byteorder record)" / "PyTorch 1.x (file format 3)".
  std::string saved_by() const;
};

// The most one record (a code file, the version) may hold once inflated: TorchScript source is
// kilobytes per module, and a deflated record is inflated into memory whole.
inline constexpr uint64_t kMaxTorchScriptRecord = 64ull << 20;

// Whether `name` (relative to the prefix) is a record LibTorch could load as code: `code/` and
// `.py` whatever their case.
bool is_code_record(std::string_view name);

// Reads `path` (zip_reader.hpp: every size checked, deflated records inflated within
// kMaxTorchScriptRecord, nothing executed). Throws mtrain::Error naming the file when it is not a
// TorchScript archive (no code/ records: e.g. a torch.save state dict), two records' names differ
// only in case, or its zip is damaged.
TorchScriptArchive read_torchscript_archive(const std::string& path);
// The same over an open archive (a file, or bytes in memory: the fuzz target).
TorchScriptArchive scan_torchscript_archive(ZipReader& zip);

}  // namespace mtrain

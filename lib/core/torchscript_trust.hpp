#pragma once
// A TorchScript file is a program: loading it runs its `__setstate__` methods, and training runs
// its code. mtrain refuses, before anything of it runs, a model whose code reaches outside the
// model — operators that read or write files (`aten::from_file`, `aten::save`), operators of any
// namespace but aten and prim (custom `torch.ops` libraries, c10d's collectives), or a
// `__setstate__` that does more than restore tensors — unless the user says `model.trust_code:
// true`. The check reads the archive's code (torchscript_archive.hpp), never executes it; both
// the launcher (before any rank starts) and each rank (before torch::jit::load) make it.
#include <string>
#include <vector>

#include "mtrain/core/torchscript_archive.hpp"

namespace mtrain {

struct TrustFinding {
  std::string what;   // "reads or writes files: aten::from_file"
  std::string where;  // "code/__torch__.py:14"
};

// Pure: what in `archive` is beyond a model's own computation (empty: nothing).
std::vector<TrustFinding> untrusted_code(const TorchScriptArchive& archive);

// Throws the refusal (mtrain::Error, exit 2, at model.trust_code) when `trusted` is false and
// the archive has findings.
void check_torchscript_trust(const std::string& path, const TorchScriptArchive& archive, bool trusted);

}  // namespace mtrain

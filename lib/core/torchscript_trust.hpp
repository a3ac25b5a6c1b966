#pragma once
// A TorchScript file is a program: loading it runs its `__setstate__` methods, and training runs
// its code. mtrain refuses, before anything of it runs, a model whose code calls an operator
// outside the allowlist of operators a trainable model uses (file, process and network operators,
// other libraries' `torch.ops` namespaces, custom C++ classes), or whose `__setstate__` does more
// than restore state — unless the user says `model.trust_code: true`. What the code calls is
// decided by LibTorch's own TorchScript parser in the worker (trainer/model/
// torchscript_code_check.hpp; the launcher asks `mtrain-worker model-check`); this header holds
// what both sides share: a finding, and the refusal paragraph.
#include <string>
#include <vector>

namespace mtrain {

// An operator the code refers to, and where (both sides: the worker's check, the launcher's refusal).
struct OperatorUse {
  std::string name;   // qualified: "aten::scaled_dot_product_attention"
  std::string where;  // "code/__torch__/model.py:12"
};

struct TrustFinding {
  std::string what;   // "calls aten::from_file, an operator outside the allowlist (it reads or writes files)"
  std::string where;  // "code/__torch__.py:14"
};

// Throws the refusal (mtrain::Error, exit 2, at model.trust_code) when `trusted` is false and
// there are findings.
void check_torchscript_trust(const std::string& path, const std::vector<TrustFinding>& findings, bool trusted);

}  // namespace mtrain

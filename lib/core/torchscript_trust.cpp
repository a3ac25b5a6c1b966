#include "mtrain/core/torchscript_trust.hpp"

#include <set>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain {

namespace {

// aten operators that touch the file system (TorchScript has no process or network operators
// of its own; those come only with other namespaces, refused below).
const std::set<std::string> kFileOperators = {"aten::from_file", "aten::save", "aten::load", "aten::_load_for_mobile",
                                              "aten::_save_for_mobile", "aten::_save_parameters",
                                              "aten::_load_parameters"};

// What a __setstate__ may call to put tensors back: indexing the state, copies and views.
const std::set<std::string> kRestoreOperators = {"aten::__getitem__", "aten::len",     "aten::copy_", "aten::detach",
                                                 "aten::clone",       "aten::to",      "aten::contiguous",
                                                 "aten::view",        "aten::reshape", "aten::set_"};

std::string ns_of(const std::string& op) { return op.substr(0, op.find("::")); }

}  // namespace

std::vector<TrustFinding> untrusted_code(const TorchScriptArchive& archive) {
  std::vector<TrustFinding> out;
  for (const auto& use : archive.operators) {
    if (kFileOperators.count(use.name)) {
      out.push_back({"reads or writes files: " + use.name, use.where});
    } else if (const std::string ns = ns_of(use.name); ns != "aten" && ns != "prim") {
      out.push_back({fmt::format("calls an operator of the '{}' library ({}), code outside PyTorch's own operators", ns,
                                 use.name),
                     use.where});
    }
  }
  for (const auto& m : archive.setstates)
    for (const auto& call : m.calls)
      if (!kRestoreOperators.count(call.name)) {
        out.push_back({fmt::format("has a __setstate__ ({}) that calls {}, which runs while the file loads and does "
                                   "more than restore tensors",
                                   m.where, call.name),
                       call.where});
        break;
      }
  return out;
}

void check_torchscript_trust(const std::string& path, const TorchScriptArchive& archive, bool trusted) {
  if (trusted) return;
  const auto findings = untrusted_code(archive);
  if (findings.empty()) return;
  std::vector<std::string> rest;
  for (size_t i = 1; i < findings.size() && i < 4; ++i) rest.push_back(findings[i].what + " at " + findings[i].where);
  throw Error(fmt::format("the TorchScript model '{}' is a program that reaches outside the model: it {} (at {}){}; "
                          "nothing of it was run",
                          path, findings.front().what, findings.front().where,
                          rest.empty() ? "" : "; also " + str::join(rest, "; ")),
              "use a model file from a source you trust; if you wrote it or trust its author, set "
              "model.trust_code: true (--set model.trust_code=true) to run it as it is (docs/your-model.md, "
              "\"A TorchScript file is a program\")")
      .at("model.trust_code");
}

}  // namespace mtrain

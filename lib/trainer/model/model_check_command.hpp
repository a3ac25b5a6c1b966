#pragma once
// `mtrain-worker model-check FILE`: what the launcher needs to know of a TorchScript model before
// any rank starts, decided by this worker's own LibTorch (its TorchScript parser and operator
// registry) without loading the model: the trust findings and the operators it lacks
// (torchscript_code_check.hpp). Printed as one JSON object (lib/launch/model_check.cpp reads it):
//   {"saved_by": "...", "format_version": 3, "operators": [{"name", "where"}],
//    "unknown": [{"name", "where"}], "findings": [{"what", "where"}], "classes": [{"name", "count"}]}
// When the code may run (no findings, or `--trusted`: model.trust_code), the module is loaded, a
// trace that froze a layer's training/evaluation mode is refused (torchscript.hpp,
// check_trace_modes) and its submodule classes are listed (torchscript.hpp, submodule_classes:
// what `mtrain config init` offers for fsdp.wrap_module_types); otherwise "classes" is empty.
// A file that is not a TorchScript archive, does not parse, or is such a trace is an
// mtrain::Error (exit 2): its paragraph is the launcher's refusal.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

nlohmann::json run_model_check(const std::string& path, bool trusted);

// Parses the subcommand's arguments (one FILE) and returns the process's exit code.
int run_model_check_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace mtrain::trainer

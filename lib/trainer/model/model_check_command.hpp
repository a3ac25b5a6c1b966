#pragma once
// `mtrain-worker model-check [--trusted] [--eval EVAL] FILE`: what the launcher needs to know of a
// TorchScript model (FILE: model.path; EVAL: model.eval_path) before any rank starts, decided by
// this worker's own LibTorch (its TorchScript parser and operator registry) without loading the
// model: the trust findings and the operators it lacks (torchscript_code_check.hpp). Printed as
// one JSON object (lib/launch/model_check.cpp reads it):
//   {"saved_by": "...", "format_version": 3, "operators": [{"name", "where"}],
//    "unknown": [{"name", "where"}], "findings": [{"what", "where"}], "classes": [{"name", "count"}],
//    "eval": {"saved_by", "format_version", "operators", "unknown", "findings"}}   (with --eval)
// When the code may run (no findings, or `--trusted`: model.trust_code), the module (and EVAL) is
// loaded, a trace that would act wrongly in one of its phases is refused (trace_pair.hpp: a trace
// that froze a layer's training/evaluation mode without its eval-mode pair, or a pair that does
// not match) and its submodule classes are listed (torchscript.hpp, submodule_classes: what
// `mtrain config init` offers for fsdp.wrap_module_types); otherwise "classes" is empty.
// A file that is not a TorchScript archive, does not parse, or is such a trace is an
// mtrain::Error (exit 2): its paragraph is the launcher's refusal.
// `mtrain-worker model-check --compiled [--init FILE [--init-not-strict]] DIR`: a compiled package
// (model.name compiled) checked by compiled_model.hpp's check_compiled_package, no program loaded;
// prints {"compiled": true}, or refuses (exit 2) in one paragraph.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

nlohmann::json run_model_check(const std::string& path, bool trusted, const std::string& eval_path = "");

// Parses the subcommand's arguments (one FILE) and returns the process's exit code.
int run_model_check_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace mtrain::trainer

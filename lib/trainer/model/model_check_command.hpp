#pragma once
// `mtrain-worker model-check FILE`: what the launcher needs to know of a TorchScript model before
// any rank starts, decided by this worker's own LibTorch (its TorchScript parser and operator
// registry) without loading the model: the trust findings and the operators it lacks
// (torchscript_code_check.hpp). Printed as one JSON object (lib/launch/model_check.cpp reads it):
//   {"saved_by": "...", "format_version": 3, "operators": [{"name", "where"}],
//    "unknown": [{"name", "where"}], "findings": [{"what", "where"}]}
// A file that is not a TorchScript archive, or does not parse, is an mtrain::Error (exit 2).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

nlohmann::json run_model_check(const std::string& path);

// Parses the subcommand's arguments (one FILE) and returns the process's exit code.
int run_model_check_command(const std::vector<std::string>& args, std::ostream& out);

}  // namespace mtrain::trainer

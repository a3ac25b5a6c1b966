#pragma once
// What this worker was built with (`mtrain-worker build-info`). The facts are the ones fixed at
// compile time; the launcher reads them from the file written beside the worker at build time
// (core/worker_facts.hpp), so it never starts LibTorch to learn them.
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

// {"libtorch", "cuda": {compiled, version}, "nccl": {compiled, version}, "gloo",
//  "file_format_max"}: the LibTorch version, whether CUDA and NCCL are compiled in and which
// versions, and the newest TorchScript file format this LibTorch reads.
nlohmann::json build_facts();
// build_facts() plus what this process sees: cuda.devices, threads, the BLAS it mapped.
nlohmann::json build_info();
// Every operator name this LibTorch registers ("aten::linear", "prim::device", …), sorted.
std::vector<std::string> registered_operators();

// `mtrain-worker build-info [--facts FILE [--set key=value]...]` (args after build-info): with no
// arguments prints build_info() as JSON on `out`; with --facts writes build_facts() (each --set
// adds build.<key>) to FILE and the operator list beside it (core/worker_facts.hpp), each
// replaced whole. Returns the exit code; bad arguments throw mtrain::Error with `usage` as hint.
int run_build_info_command(const std::vector<std::string>& args, const std::string& usage, std::ostream& out);

}  // namespace mtrain::trainer

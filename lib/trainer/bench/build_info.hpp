#pragma once
// What this worker was built with (`mtrain-worker build-info`). The facts are the ones fixed at
// compile time; the launcher reads them from the file written beside the worker at build time
// (core/worker_facts.hpp), so it never starts LibTorch to learn them.
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

}  // namespace mtrain::trainer

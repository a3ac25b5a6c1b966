#pragma once
// torch::jit::load's failures as one paragraph naming the file (never LibTorch's multi-line dump
// of the TorchScript source): an operator this LibTorch lacks, a file format newer than it reads,
// a file that is not an archive, or anything else by its first line. The launcher refuses most
// of these before any rank starts (launch/model_check.hpp); this is the rank's own word for a
// model it was handed on another host, or one the launcher could not inspect.
#include <optional>
#include <string>

#include "lib/core/error.hpp"
#include "lib/core/worker_facts.hpp"

namespace mtrain::trainer {

// `what` is the exception's text; `facts` this worker's build facts (for the versions and the
// rebuild command), when known.
Error torchscript_load_failure(const std::string& path, const std::string& what,
                               const std::optional<WorkerFacts>& facts);

}  // namespace mtrain::trainer

#pragma once
// `mtrain-worker estimate-probe --job FILE [--batches 1,2] [--warmup 0|1]`: what `mtrain estimate` cannot know
// without LibTorch, measured on this CPU in one process and printed as one JSON object:
//  * the model's parameters (name, numel, the unit — block — each belongs to) and buffer bytes,
//    read from the model as the trainer builds it (a TorchScript file is loaded on the CPU);
//  * the process's resident memory before the model exists (LibTorch and the runtime);
//  * for each batch size: the resident high-water mark of one forward + backward above what was
//    resident before it (activations, autograd's temporaries). The gradients exist beforehand
//    (zeros, as after the first step: backward accumulates into them in place), and by default a
//    warm-up pass runs first so that lazily made state (thread pools, kernels' caches) is not
//    counted; `--warmup 0` skips it for a model whose every pass costs minutes (a 7B slice).
// The high-water mark is reset through /proc/self/clear_refs (Linux), so each pass is measured
// alone. lib/estimate (no LibTorch) scales the points to the requested batch and model.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

struct EstimateProbeOptions {
  std::string job_path;
  std::vector<int64_t> batches{1, 2};
  bool warmup = true;
};

// Parses the subcommand's arguments (after "estimate-probe"); throws mtrain::Error (exit 2).
EstimateProbeOptions parse_estimate_probe_args(const std::vector<std::string>& args);

nlohmann::json run_estimate_probe(const EstimateProbeOptions& o);

}  // namespace mtrain::trainer

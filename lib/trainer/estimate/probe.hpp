#pragma once
// `mtrain-worker estimate-probe --job FILE [--batches 1,2]`: what `mtrain estimate` cannot know
// without LibTorch, measured on this CPU in one process and printed as one JSON object:
//  * the model's parameters (name, numel, the unit — block — each belongs to) and buffer bytes,
//    read from the model as the trainer builds it (a TorchScript file is loaded on the CPU);
//  * the process's resident memory before the model exists (LibTorch and the runtime);
//  * for each batch size: the resident high-water mark of one forward + backward above what was
//    resident before it (activations, autograd's temporaries), after a warm-up pass so that the
//    gradients already exist and are accumulated in place, as in every step after the first.
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
};

// Parses the subcommand's arguments (after "estimate-probe"); throws mtrain::Error (exit 2).
EstimateProbeOptions parse_estimate_probe_args(const std::vector<std::string>& args);

nlohmann::json run_estimate_probe(const EstimateProbeOptions& o);

}  // namespace mtrain::trainer

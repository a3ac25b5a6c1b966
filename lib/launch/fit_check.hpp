#pragma once
// Will it fit, asked before any rank of the bundled trainer starts (lib/estimate): the job's
// estimate on the plan's world against each rank's memory. `--strategy auto` becomes the fastest
// strategy that fits (said in one line on stderr, and recorded in the run folder's
// estimate.json); a job whose own strategy does not fit is refused with a paragraph naming the
// two cheapest changes that would make it fit (exit 2), unless --force.
#include <string>

#include "lib/launch/launch.hpp"

namespace mtrain::launch {

struct FitRecord {
  std::string estimate_json;  // for <run folder>/estimate.json; "" = no estimate was made
  std::string job_spec_json;  // --strategy auto: the job with the chosen strategy; "" = the job as it was
};

// world / ranks_per_node / gpu_ranks: the plan's (gpu_ranks: its ranks were given GPUs).
//
// One memory model with `mtrain estimate` (issue 45 item 3): where the check matters — GPU ranks,
// an explicit --device-memory, --strategy auto — the launch measures the model as estimate does
// (the worker's probe: activations and runtime included, a TorchScript model's shapes; cached per
// job, docs/estimate.md), so launch, auto and estimate give the same numbers. CPU ranks without
// --device-memory are checked from the formulas alone against the host's RAM (no probe start-up on
// every small CPU run); a TorchScript model there is not checked.
FitRecord check_fit(const LaunchOptions& opt, int world, int ranks_per_node, bool gpu_ranks);

}  // namespace mtrain::launch

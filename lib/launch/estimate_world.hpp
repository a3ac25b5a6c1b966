#pragma once
// `mtrain estimate` for the world `mtrain launch` would start: the ranks and GPUs of a job's
// launch options counted by the plan's own rules (config::ranks_per_node, plan::selected_gpus)
// over the launcher's host probe, so an estimate never plans for another world than the launch
// runs.
#include "lib/estimate/estimate_job.hpp"
#include "lib/launch/launch.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::launch {

// The world, device, GPUs and device memory of a job's launch options (apply_launch_settings)
// on a host with `here`'s facts; a hostfile's hosts and slots where the options name one.
estimate::JobEstimateOptions estimate_options(const LaunchOptions& opt, const plan::HostFacts& here);

}  // namespace mtrain::launch

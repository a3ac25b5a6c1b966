#pragma once
// `mtrain estimate` for the world `mtrain launch` would start: the ranks and GPUs of a resolved
// job counted by the plan's own rules (config::ranks_per_node, plan::selected_gpus) over the
// launcher's host probe, so an estimate never plans for another world than the launch runs.
#include <nlohmann/json.hpp>

#include "lib/estimate/estimate_job.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::launch {

// The world, device, GPUs and device memory of a resolved job (launch.* present) on a host
// with `here`'s facts; a hostfile's hosts and slots where launch.hostfile names one.
estimate::JobEstimateOptions estimate_options(const nlohmann::json& job, const plan::HostFacts& here);

}  // namespace mtrain::launch

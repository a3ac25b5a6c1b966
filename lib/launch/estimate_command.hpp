#pragma once
// `mtrain estimate` once its flags are read: the resolved job checked as `mtrain launch` checks it
// before any rank starts, then estimated for the world the launch would start (estimate_world).
// Here rather than in apps/mtrain so that the command stays flags → options → one call
// (docs/architecture.md §2) and its refusals are tested with the library.
#include <string>

#include <nlohmann/json.hpp>

#include "lib/config/registry.hpp"
#include "lib/estimate/estimate.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::launch {

struct EstimateRequest {
  config::Resolved resolved;  // the job with every setting present, launch.* included, and their sources
  plan::HostFacts here;  // this host as the launcher probes it (probe_host)
  std::string weights;  // a safetensors file: shapes from its header, nothing measured
  std::string worker_path;  // mtrain-worker; "" = activations and runtime not measured
};

// Without `weights` the probe trains one step of the model on its data, so the model file is
// checked as the launch checks it (check_trainer_files) and the data as the launch would refuse
// it: a refusal is the launch's words as mtrain::UsageError (exit 2), never the probe's failure.
estimate::Estimate estimate_for_launch(const EstimateRequest& r);

}  // namespace mtrain::launch

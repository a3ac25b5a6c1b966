#pragma once
// The launch.* settings of the registry (lib/config/launch_settings.cpp) bound to the LaunchOptions
// fields they set, as lib/slurm/job_options.cpp binds slurm.* to JobOptions. `mtrain launch` gets
// its flags from the registry and resolves them with the job file, MTRAIN_* and --set in one
// pass (config::resolve_job); this maps the result onto the options, so every source of a launch
// setting goes through the same parse, the same checks and the same field.
#include <functional>
#include <string>
#include <vector>

#include "lib/config/registry.hpp"
#include "lib/launch/launch.hpp"

namespace mtrain::launch {

struct LaunchBinding {
  std::string key;  // launch.*
  // `given`: the value came from a file, the environment or the command line (not the default);
  // a few fields keep "unset" then, because their default is derived (hostfile slots, Slurm).
  std::function<void(LaunchOptions&, const config::json& value, bool given)> set;
};

// One entry per launch.* setting of the registry (a unit test holds the two lists equal).
const std::vector<LaunchBinding>& launch_bindings();

// Every launch.* field of `o` from the resolved job.
void apply_launch_settings(const config::Resolved& r, LaunchOptions& o);

}  // namespace mtrain::launch

#pragma once
// Facts about this host that the plan needs: name, usable cores, the GPU pool.
#include <map>
#include <string>

#include "lib/plan/plan.hpp"

namespace mtrain::launch {

using EnvMap = std::map<std::string, std::string>;

// GPU pool: an inherited CUDA_VISIBLE_DEVICES (the pool the user or scheduler gave us) or else
// the GPUs the NVIDIA driver lists under /proc/driver/nvidia/gpus (no CUDA runtime needed).
plan::HostFacts probe_host(const EnvMap& env);

}  // namespace mtrain::launch

#pragma once
// GPU ids as CUDA gives them (CUDA_VISIBLE_DEVICES) and as mtrain passes them on ("0,3"). The
// --gpus grammar itself is core/index_list.hpp.
#include <string>
#include <vector>

namespace mtrain::topology {

// CUDA_VISIBLE_DEVICES may hold UUIDs (GPU-…/MIG-…) instead of indices; those cannot be mapped
// to slot indices without the driver, so they are reported as an error with advice. Indices
// follow core/index_list.hpp without ranges; errors name the column.
std::vector<int> parse_visible_devices(const std::string& value);

std::string format_gpu_list(const std::vector<int>& ids);

}  // namespace mtrain::topology

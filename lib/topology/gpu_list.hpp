#pragma once
// GPU id lists as users write them: "0,3", "0, 2 ,5" — the --gpus flag and CUDA_VISIBLE_DEVICES.
#include <string>
#include <vector>

namespace mtrain::topology {

// Parse a comma-separated list of non-negative GPU ids. Duplicates collapse; order is kept.
// `what` names the source in errors ("--gpus", "CUDA_VISIBLE_DEVICES"); errors name the column.
std::vector<int> parse_gpu_list(const std::string& text, const std::string& what);

// CUDA_VISIBLE_DEVICES may hold UUIDs (GPU-…/MIG-…) instead of indices; those cannot be mapped
// to slot indices without the driver, so they are reported as an error with advice.
std::vector<int> parse_visible_devices(const std::string& value);

std::string format_gpu_list(const std::vector<int>& ids);

}  // namespace mtrain::topology

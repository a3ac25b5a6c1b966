#include "lib/topology/gpu_list.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/index_list.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::topology {

std::vector<int> parse_visible_devices(const std::string& value) {
  std::string v = str::trim(value);
  if (v.empty()) return {};
  if (v.find("GPU-") != std::string::npos || v.find("MIG-") != std::string::npos)
    throw Error(fmt::format("CUDA_VISIBLE_DEVICES='{}' names GPUs by UUID", value),
                "mtrain selects GPUs by index: set CUDA_VISIBLE_DEVICES to indices (see "
                "`nvidia-smi -L`) or unset it.");
  // CUDA stops at the first invalid entry (e.g. -1 hides everything after it).
  std::vector<std::string> kept;
  for (const auto& f : str::split(v, ',')) {
    if (str::trim(f).rfind('-', 0) == 0) break;
    kept.push_back(f);
  }
  if (kept.empty()) return {};
  return parse_index_list(str::join(kept, ","), "CUDA_VISIBLE_DEVICES", "GPU id", IndexRanges::No);
}

std::string format_gpu_list(const std::vector<int>& ids) {
  std::vector<std::string> parts;
  parts.reserve(ids.size());
  for (int i : ids) parts.push_back(std::to_string(i));
  return str::join(parts, ",");
}

}  // namespace mtrain::topology

#include "mtrain/topology/gpu_list.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain::topology {

std::vector<int> parse_gpu_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  if (str::trim(text).empty())
    throw Error(fmt::format("{} is empty", what), "Give GPU ids separated by commas, e.g. 0,1.");
  size_t col = 1;
  for (const auto& raw : str::split(text, ',')) {
    std::string field = str::trim(raw);
    size_t lead = raw.find_first_not_of(" \t");
    size_t at = col + (lead == std::string::npos ? 0 : lead);
    if (field.empty())
      throw parse_error(what, text, at, "empty GPU id", "Remove the extra comma.");
    auto v = str::parse_uint(field);
    if (!v || *v > 1 << 20)
      throw parse_error(what, text, at, fmt::format("'{}' is not a GPU id", field),
                        "GPU ids are non-negative integers such as 0 or 3.");
    if (std::find(out.begin(), out.end(), static_cast<int>(*v)) == out.end())
      out.push_back(static_cast<int>(*v));
    col += raw.size() + 1;
  }
  return out;
}

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
  return parse_gpu_list(str::join(kept, ","), "CUDA_VISIBLE_DEVICES");
}

std::string format_gpu_list(const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (int i : ids) parts.push_back(std::to_string(i));
  return str::join(parts, ",");
}

}  // namespace mtrain::topology

// GPU id lists: --gpus (core/index_list) and CUDA_VISIBLE_DEVICES. A parsed list formats and parses back to itself.
#include <set>

#include "fuzz_common.hpp"
#include "lib/core/index_list.hpp"
#include "lib/topology/gpu_list.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  auto check = [](const std::vector<int>& ids) {
    std::set<int> seen;
    for (int id : ids) {
      FUZZ_CHECK(id >= 0);
      FUZZ_CHECK(seen.insert(id).second);
    }
    if (!ids.empty()) FUZZ_CHECK(parse_index_list(topology::format_gpu_list(ids), "round trip", "GPU id") == ids);
  };
  fuzz::accepts([&] { check(parse_index_selection(in, "--gpus", "GPU id")); });
  fuzz::accepts([&] { check(topology::parse_visible_devices(in)); });
  return 0;
}

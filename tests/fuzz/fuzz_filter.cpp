// --include / --exclude filters over an inventory. Input: line 1 the include filter, line 2 the
// exclude filter, the rest a hostfile (a fixed three-host inventory when it does not parse).
#include "fuzz_common.hpp"
#include "lib/topology/filter.hpp"
#include "lib/topology/hostfile.hpp"

namespace {
using mtrain::topology::Inventory;

// Every host of `sub` is in `inv`, with a subset of its slots, in inventory order.
void check_subset(const Inventory& sub, const Inventory& inv) {
  size_t pos = 0;
  for (const auto& h : sub) {
    while (pos < inv.size() && inv[pos].host != h.host) ++pos;
    FUZZ_CHECK(pos < inv.size());
    FUZZ_CHECK(!h.slots.empty());
    for (int s : h.slots) {
      bool found = false;
      for (int t : inv[pos].slots) found = found || s == t;
      FUZZ_CHECK(found);
    }
    for (size_t i = 1; i < h.slots.size(); ++i) FUZZ_CHECK(h.slots[i - 1] < h.slots[i]);
    ++pos;
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const auto line1 = fuzz::first_line(fuzz::text(data, size));
  const auto line2 = fuzz::first_line(line1.second);
  const std::string& include = line1.first;
  const std::string& exclude = line2.first;
  const std::string& hostfile = line2.second;
  Inventory inv;
  if (!fuzz::accepts([&] { inv = topology::parse_hostfile(hostfile, "hosts.txt"); }) || inv.empty())
    inv = topology::parse_hostfile("worker-0 slots=4\nworker-1 slots=2\nalice@gpu-2 gpus=0,2,3\n", "fixed");
  if (!include.empty()) {
    fuzz::accepts([&] {
      auto sub = topology::apply_include(inv, include);
      check_subset(sub, inv);
    });
  }
  if (!exclude.empty()) {
    fuzz::accepts([&] {
      auto sub = topology::apply_exclude(inv, exclude);
      check_subset(sub, inv);
    });
  }
  return 0;
}

#include "lib/topology/inventory.hpp"

namespace mtrain::topology {

const HostSlots* find_host(const Inventory& inv, const std::string& host) {
  for (const auto& h : inv)
    if (h.host == host) return &h;
  return nullptr;
}

int total_slots(const Inventory& inv) {
  int n = 0;
  for (const auto& h : inv) n += static_cast<int>(h.slots.size());
  return n;
}

}  // namespace mtrain::topology

#pragma once
// What a job may run on: hosts, each with the slot (GPU) indices that may be used.
#include <string>
#include <vector>

namespace mtrain::topology {

struct HostSlots {
  std::string host;        // as written (no user part)
  std::string user;        // from user@host, may be empty
  std::vector<int> slots;  // ascending, unique
};

using Inventory = std::vector<HostSlots>;

const HostSlots* find_host(const Inventory& inv, const std::string& host);
int total_slots(const Inventory& inv);

}  // namespace mtrain::topology

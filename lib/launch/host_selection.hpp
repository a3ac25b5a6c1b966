#pragma once
// The hosts a launch runs on when it is given a hostfile: the hostfile's lines, filtered by
// --include/--exclude and --num-nodes/--num-gpus as DeepSpeed filters them. With a hostfile those
// filters select hosts and slots, not GPUs of this machine; the caller says so to the plan
// (decide_launch drops them from the plan's GPU selection).
#include <optional>
#include <string>

#include "lib/launch/launch.hpp"
#include "lib/launch/launch_decision.hpp"
#include "lib/topology/inventory.hpp"

namespace mtrain::launch {

// Does an --include/--exclude text name a host other than localhost?
bool names_other_host(const std::string& filter);

// nullopt without a hostfile, or when the hostfile is missing and no filter names another host
// (a note then says the job runs on this machine only). Reads `opt`, changes nothing in it.
// Throws mtrain::Error for --launcher ssh without a readable hostfile, --num-nodes/--num-gpus
// without one, and what the hostfile's reader or topology::select_hosts refuses.
std::optional<topology::Inventory> selected_hosts(const LaunchOptions& opt, LaunchProbes& probes);

}  // namespace mtrain::launch

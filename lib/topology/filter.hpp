#pragma once
// DeepSpeed-launcher resource filters: --include / --exclude "NODE[:SLOT,SLOT][@NODE…]".
//
// Behaviour follows the DeepSpeed runner: a bare host means all of its slots; duplicate slots
// collapse; hosts keep inventory order; excluding every slot of a host drops the host; an unknown
// host or slot is an error. Where DeepSpeed overwrites a host named twice in --include, mtrain
// takes the union (the user asked for both).
#include <string>

#include "lib/topology/inventory.hpp"

namespace mtrain::topology {

Inventory apply_include(const Inventory& inv, const std::string& filter);
Inventory apply_exclude(const Inventory& inv, const std::string& filter);

// The launcher's host selection: at most one of --include, --exclude, or --num-nodes/--num-gpus
// (DeepSpeed's: the first N hosts in hostfile order, the first N slots of each); each given
// choice is checked and an impossible one (more nodes or GPUs than listed) is an Error.
struct HostSelection {
  std::string include, exclude;
  int num_nodes = -1;  // -1: all
  int num_gpus = -1;   // -1: every slot of each host
};
Inventory select_hosts(const Inventory& inv, const HostSelection& sel);

}  // namespace mtrain::topology

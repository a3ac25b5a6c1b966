#pragma once
// DeepSpeed-launcher resource filters: --include / --exclude "NODE[:SLOT,SLOT][@NODE…]".
//
// Behaviour follows the DeepSpeed runner: a bare host means all of its slots; duplicate slots
// collapse; hosts keep inventory order; excluding every slot of a host drops the host; an unknown
// host or slot is an error. Where DeepSpeed overwrites a host named twice in --include, mtrain
// takes the union (the user asked for both).
#include <string>

#include "mtrain/topology/inventory.hpp"

namespace mtrain::topology {

Inventory apply_include(const Inventory& inv, const std::string& filter);
Inventory apply_exclude(const Inventory& inv, const std::string& filter);

}  // namespace mtrain::topology

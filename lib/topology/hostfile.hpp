#pragma once
// Hostfiles in the DeepSpeed format, one host per line:
//
//   # comment                      (a '#' starts a comment anywhere on a line)
//   worker-0 slots=4               (slots 0..3)
//   alice@worker-1 slots=2         (ssh as user alice)
//   worker-2 gpus=0,2,3            (exactly these slot indices)
//
// Blank lines are ignored; fields are separated by spaces or tabs. Every error names
// "<path>:<line>:<column>" and says what to write instead (mtrain::Error, exit code 2).
#include <string>

#include "lib/topology/inventory.hpp"

namespace mtrain::topology {

// Parse hostfile text; `path` is only used to name the place in errors.
Inventory parse_hostfile(const std::string& text, const std::string& path);

// Read and parse a hostfile; an unreadable or missing file is an Error naming the path.
Inventory load_hostfile(const std::string& path);

}  // namespace mtrain::topology

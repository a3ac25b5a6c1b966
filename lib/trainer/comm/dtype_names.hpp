#pragma once
// The one table of dtype names mtrain writes and reads (checkpoint manifests, error messages that
// show a tensor's dtype): PyTorch's Python spellings, "float32", "int64", … In comm, the lowest
// trainer part, so every part may name a dtype the same way (docs/architecture.md §10).
#include <string>

#include <ATen/ATen.h>

namespace mtrain::trainer {

std::string dtype_name(at::ScalarType t);
// Throws mtrain::Error for a name outside the table.
at::ScalarType dtype_from_name(const std::string& name);

}  // namespace mtrain::trainer

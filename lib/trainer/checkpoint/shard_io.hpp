#pragma once
// Reading a file of name → tensor in the zip format torch.load reads (tensor_archive.hpp writes
// it one tensor at a time, durably), and the manifest's dtype names.
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

// Throws mtrain::Error naming the file when it is missing, truncated or not such a dict.
std::vector<std::pair<std::string, at::Tensor>> read_tensor_dict(const std::string& path);

std::string dtype_name(at::ScalarType t);
at::ScalarType dtype_from_name(const std::string& name);

}  // namespace mtrain::trainer

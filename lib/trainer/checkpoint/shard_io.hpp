#pragma once
// Reading a file of name → tensor in the zip format torch.load reads (tensor_archive.hpp writes
// it one tensor at a time, durably). The manifest's dtype names are comm/dtype_names.hpp's.
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "lib/trainer/comm/dtype_names.hpp"

namespace mtrain::trainer {

// Throws mtrain::Error naming the file when it is missing, truncated or not such a dict.
std::vector<std::pair<std::string, at::Tensor>> read_tensor_dict(const std::string& path);


}  // namespace mtrain::trainer

#pragma once
// One rank's shard file: a dict name → tensor written with torch::pickle_save (the zip format
// torch.load reads), so shards are inspectable from Python too.
#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain::trainer {

void write_tensor_dict(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors);
// Throws mtrain::Error naming the file when it is missing, truncated or not such a dict.
std::vector<std::pair<std::string, at::Tensor>> read_tensor_dict(const std::string& path);

std::string dtype_name(at::ScalarType t);
at::ScalarType dtype_from_name(const std::string& name);

}  // namespace mtrain::trainer

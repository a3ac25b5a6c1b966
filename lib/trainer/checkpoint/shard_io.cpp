#include "mtrain/trainer/checkpoint/shard_io.hpp"

#include <torch/serialize.h>

#include <cstdio>
#include <fstream>
#include <iterator>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/tensor_archive.hpp"

namespace mtrain::trainer {

void write_tensor_dict(const std::string& path,
                       const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  write_tensor_file(path, tensors);
}

std::vector<std::pair<std::string, at::Tensor>> read_tensor_dict(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error(fmt::format("{}: cannot open the checkpoint shard", path),
                "the checkpoint is incomplete; resume from another one or start afresh");
  }
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  c10::IValue v;
  try {
    v = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    std::string what = e.what();
    what = what.substr(0, what.find('\n'));
    throw Error(fmt::format("{}: the checkpoint shard is damaged ({} bytes; {})", path,
                            bytes.size(), what),
                "resume from another checkpoint or start afresh");
  }
  if (!v.isGenericDict()) {
    throw Error(fmt::format("{}: not a dict of tensors", path),
                "resume from another checkpoint or start afresh");
  }
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& e : v.toGenericDict()) {
    if (!e.key().isString() || !e.value().isTensor()) {
      throw Error(fmt::format("{}: an entry is not name → tensor", path),
                  "resume from another checkpoint or start afresh");
    }
    out.emplace_back(e.key().toStringRef(), e.value().toTensor());
  }
  return out;
}

std::string dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat: return "float32";
    case at::kDouble: return "float64";
    case at::kHalf: return "float16";
    case at::kBFloat16: return "bfloat16";
    case at::kLong: return "int64";
    case at::kInt: return "int32";
    case at::kByte: return "uint8";
    default: return c10::toString(t);
  }
}

at::ScalarType dtype_from_name(const std::string& n) {
  if (n == "float32") return at::kFloat;
  if (n == "float64") return at::kDouble;
  if (n == "float16") return at::kHalf;
  if (n == "bfloat16") return at::kBFloat16;
  if (n == "int64") return at::kLong;
  if (n == "int32") return at::kInt;
  if (n == "uint8") return at::kByte;
  throw Error("unknown dtype '" + n + "' in a checkpoint manifest");
}

}  // namespace mtrain::trainer

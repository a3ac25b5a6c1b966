#include "lib/trainer/comm/dtype_names.hpp"

#include "lib/core/error.hpp"

namespace mtrain::trainer {

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
  throw UsageError("unknown dtype '" + n + "' in a checkpoint manifest");
}

}  // namespace mtrain::trainer

#include "mtrain/trainer/checkpoint/shard_io.hpp"

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/trainer/checkpoint/state_dict_pickle.hpp"
#include "mtrain/trainer/checkpoint/tensor_archive.hpp"
#include "mtrain/trainer/checkpoint/weights_file.hpp"

namespace mtrain::trainer {

std::vector<std::pair<std::string, at::Tensor>> read_tensor_dict(const std::string& path) {
  // Through mtrain's checked readers (core/zip_reader.hpp, state_dict_pickle.hpp), not LibTorch's
  // unpickler: a format-1 shard can come from anywhere (`--init DIR`), and that unpickler
  // recursed per nesting level and allocated whatever storage size the pickle declared.
  ArchiveReader zip(path);
  const PickledStateDict sd = parse_state_dict_pickle(zip.record("data.pkl"), path);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& t : sd.tensors) {
    const std::string problem = pickled_tensor_problem(t, zip.record_bytes(t.storage_key));
    if (!problem.empty()) {
      throw Error(fmt::format("{}: tensor '{}' does not fit its data: {}", path, t.name, problem),
                  "resume from another checkpoint or start afresh");
    }
    out.emplace_back(t.name, read_pickled_tensor(zip, t, pickled_scalar_type(t)).view(t.shape));
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

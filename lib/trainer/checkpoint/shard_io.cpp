#include "lib/trainer/checkpoint/shard_io.hpp"

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/state_dict_pickle.hpp"
#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/trainer/checkpoint/weights_file.hpp"

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
      throw UsageError(fmt::format("{}: tensor '{}' does not fit its data: {}", path, t.name, problem),
                       "resume from another checkpoint or start afresh");
    }
    out.emplace_back(t.name, read_pickled_tensor(zip, t, pickled_scalar_type(t)).view(t.shape));
  }
  return out;
}

}  // namespace mtrain::trainer

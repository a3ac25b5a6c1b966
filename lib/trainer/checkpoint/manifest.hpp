#pragma once
// Checkpoint layout: <work_dir>/checkpoints/step_<N>/
//   manifest.json          format_version, strategy, world_size, step, trainer state (sampler,
//                          RNG), and for every logical tensor its global shape, dtype and the
//                          pieces [offset, offset+numel) each rank's file holds
//   shard_rank<r>.pt       rank r's pieces (a torch.load-able dict name → flat tensor, plus
//                          "rng/cpu": the rank's CPU generator state)
//   COMPLETE               written last, after every rank's shard is on disk; the folder is
//                          built as .tmp_step_<N> and renamed, so a step_<N> without COMPLETE
//                          only exists if a crash hit between rename and marker — never loaded.
// Offsets are global (in the flattened logical tensor), so a reader at another world size or
// strategy can assemble any range it needs (resharding).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

constexpr int kCheckpointFormatVersion = 1;

struct PieceRef {
  int rank = 0;
  std::string file;  // relative to the checkpoint folder
  int64_t offset = 0;
  int64_t numel = 0;
};

struct TensorMeta {
  std::vector<int64_t> shape;
  std::string dtype;  // "float32", "int64", …
  std::vector<PieceRef> pieces;
};

struct Manifest {
  int format_version = kCheckpointFormatVersion;
  std::string strategy;
  int world_size = 1;
  int64_t step = 0;
  nlohmann::json state;  // trainer state: sampler position, schedule, RNG description
  std::map<std::string, TensorMeta> tensors;
};

nlohmann::json to_json(const Manifest& m);
// Throws mtrain::Error naming `origin` (the file) for anything missing or malformed.
Manifest manifest_from_json(const nlohmann::json& j, const std::string& origin);
Manifest read_manifest(const std::string& checkpoint_dir);

}  // namespace mtrain::trainer

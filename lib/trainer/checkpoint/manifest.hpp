#pragma once
// Checkpoint layout: <work_dir>/checkpoints/step_<N>/
//   manifest.json          format_version, strategy, world_size, step, trainer state (sampler,
//                          RNG), and for every logical tensor its global shape, dtype and the
//                          pieces [offset, offset+numel) each rank's file holds
//   shard_rank<r>.pt       rank r's pieces (a torch.load-able dict name → flat tensor, plus
//                          "rng/cpu": the rank's CPU generator state)
//   COMPLETE               written last. The folder is built as .tmp_step_<N>: every shard is
//                          fsynced, then the manifest, then the folder is renamed to step_<N>
//                          and COMPLETE written (and fsynced); a step_<N> without COMPLETE only
//                          exists if a crash hit between rename and marker — never loaded.
// Integrity (format 2 and 3): `files` gives every shard's byte size and CRC-32C, and each piece the
// zip record key it lives in, so a piece is read with one pread and a damaged file is named
// with expected vs actual size/checksum. The manifest carries a checksum of its own content
// ("checksum", CRC-32C), covering every dtype, shape and piece. Format 3 (written since issue 29)
// must have it: a format-3 manifest without one is refused, so a dtype cannot be edited and the
// checksum dropped. Formats 1 (no shard checksums) and 2 (shard checksums; a manifest checksum
// only if written after issue 17) are the documented older formats, still read; for them the
// readers check each piece's record size against its numel × dtype size, so an edited dtype is
// caught there, and `checkpoint verify` prints a notice.
// Offsets are global (in the flattened logical tensor), so a reader at another world size or
// strategy can assemble any range it needs (resharding).
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

// A checkpoint's tensor names: "model/<parameter>" and "optim/<state>/<parameter>".
inline const std::string kModelPrefix = "model/";

constexpr int kCheckpointFormatVersion = 3;
// The first format whose manifest must carry its checksum.
constexpr int kChecksummedFormat = 3;
constexpr int kOldestReadableFormat = 1;

struct PieceRef {
  int rank = 0;
  std::string file;  // relative to the checkpoint folder
  int64_t offset = 0;
  int64_t numel = 0;
  std::string key;  // record key in the file (format 2); "" = load the file's dict (format 1)
};

// A rank-local tensor in a shard (the RNG state) that is not part of any logical tensor.
struct ExtraRef {
  std::string key;
  std::string dtype;
  std::vector<int64_t> shape;
};

struct FileMeta {
  int rank = 0;
  uint64_t bytes = 0;
  std::string checksum;  // "crc32c:xxxxxxxx"
  std::map<std::string, ExtraRef> extras;
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
  std::map<std::string, FileMeta> files;  // format 2: every shard file
  std::vector<std::string> order;         // tensor names in the order the strategy listed them
  // Read back with a matching "checksum" (CRC-32C over the rest of the manifest; every manifest
  // written since issue 17 has one). false: an older manifest, read without that check.
  bool checksummed = false;
};

// Bytes per element of a manifest dtype name (those shard_io.hpp dtype_name writes and
// dtype_from_name reads: "float32" → 4), 0 for any other name. Torch-free.
int dtype_name_bytes(const std::string& dtype);

// "crc32c:…" over the manifest JSON without its "checksum" member (see to_json).
std::string manifest_checksum(nlohmann::json j);

nlohmann::json to_json(const Manifest& m);
// Throws mtrain::Error naming `origin` (the file) for anything missing or malformed.
Manifest manifest_from_json(const nlohmann::json& j, const std::string& origin);
Manifest read_manifest(const std::string& checkpoint_dir);

// Elements of a tensor of this shape (1 for a scalar's empty shape).
int64_t numel_of(const std::vector<int64_t>& shape);

}  // namespace mtrain::trainer

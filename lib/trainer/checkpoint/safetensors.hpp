#pragma once
// The safetensors format (huggingface/safetensors), written streamed and read by element range.
//
// Layout: 8 bytes, little-endian u64 N; N bytes of JSON
//   {"__metadata__": {string: string}, "<name>": {"dtype": "F32", "shape": [..],
//    "data_offsets": [begin, end]}, ...}
// padded with spaces so that the data starts 8-byte aligned; then the byte buffer, every
// tensor's raw little-endian row-major bytes at [begin, end) of it. The buffer is covered
// exactly: offsets contiguous, no holes, no overlap. The header needs every name, dtype and
// shape but no data, so the writer emits it first and then produces each tensor, writes it and
// drops it (memory holds one tensor). The reader validates the whole header against the file
// size before any read and then preads ranges; nothing is read whole.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "lib/trainer/checkpoint/tensor_archive.hpp"
#include "lib/core/unique_fd.hpp"

namespace mtrain::trainer {

class DurableWriter;

// "F32" ↔ at::kFloat etc.: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL. Throws mtrain::Error for
// dtypes mtrain does not handle (unsigned 16/32/64-bit, 8-bit floats).
std::string safetensors_dtype_name(at::ScalarType t);
at::ScalarType safetensors_dtype(const std::string& name);

// Writes the file through `out` (the caller commits). Entries are written in the given order;
// each entry's data() is called exactly once, in order. Returns the bytes written.
uint64_t write_safetensors(DurableWriter& out, const std::vector<ArchiveEntry>& entries,
                           const std::map<std::string, std::string>& metadata = {});

struct SafetensorsTensor {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;  // in the byte buffer
};

class SafetensorsReader {
 public:
  // Opens and validates the header. Throws mtrain::Error (exit 2) naming the file and what is
  // wrong: too short, header length past the end, not JSON, an entry without dtype/shape/
  // data_offsets, an unknown dtype, shape × item size ≠ byte length, offsets out of range,
  // overlapping or leaving holes, bytes after the last tensor.
  explicit SafetensorsReader(std::string path);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const std::string& path() const { return path_; }
  // In header order (as the JSON lists them).
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const SafetensorsTensor* find(const std::string& name) const;
  // `numel` elements from element `offset` of the flattened tensor, in its stored dtype (flat CPU).
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const;

 private:
  std::string path_;
  UniqueFd fd_;
  uint64_t data_start_ = 0;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// True when the file starts like a safetensors file (a plausible header length, then '{').
bool looks_like_safetensors(const std::string& path);

}  // namespace mtrain::trainer

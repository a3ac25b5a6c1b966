#pragma once
// torch.load-able files of name → tensor, written and read one tensor at a time.
//
// The file is the zip torch.save writes for a state dict: data.pkl (a pickled
// collections.OrderedDict whose tensors refer to storages by key, exactly as Python's torch.save
// pickles them, so that torch.load with PyTorch ≥ 2.6's defaults (weights_only=True) and 1.13's
// both read it) plus one uncompressed record data/<key> per storage. Writing: the pickle needs
// only names, dtypes and shapes, so it is written before any tensor data exists; then each
// entry's data is produced, written as its record and dropped. Files written before issue 44
// (LibTorch's pickler: a typed dict under torch.jit._pickle.restore_type_tag) are still read.
// Reading: records are stored, not
// compressed, so an element range of one tensor is a pread at the record's offset — a shard is
// never loaded whole to read a piece of it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>

namespace mtrain {
class ZipReader;
}  // namespace mtrain

namespace mtrain::trainer {

class DurableWriter;

struct ArchiveEntry {
  std::string name;
  at::ScalarType dtype = at::kFloat;
  std::vector<int64_t> shape;
  // Produces the entry's data when its record is written: a CPU tensor of `dtype` with the
  // shape's element count (made contiguous by the writer if it is not).
  std::function<at::Tensor()> data;
};

struct ArchiveWritten {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
  std::vector<std::string> keys;  // record key of each entry, in order
};

// Writes the archive through `out` (the caller commits it). Throws mtrain::Error (the writer's
// error when the disk refused bytes; the entry's name when its data does not match).
ArchiveWritten write_tensor_archive(DurableWriter& out, const std::vector<ArchiveEntry>& entries);

// Convenience: a durable file of name → tensor (the tensors already in memory).
ArchiveWritten write_tensor_file(const std::string& path,
                                 const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                 const std::function<void()>& progress = {});

// The largest data.pkl read (metadata only: a 10^5-tensor state dict pickles to a few MB).
inline constexpr uint64_t kMaxPickleBytes = 256ull << 20;

// Reads go through ZipReader (core/zip_reader.hpp): every offset and size checked against the file
// and the record, compressed tensor records refused, never read whole except data.pkl.
class ArchiveReader {
 public:
  // Throws mtrain::Error naming the file when it is missing, not a regular file or not a torch zip.
  explicit ArchiveReader(std::string path);
  ~ArchiveReader();
  // `numel` elements of `dtype` from element `offset` of record data/<key>; refused when they
  // pass the record's end.
  at::Tensor read(const std::string& key, at::ScalarType dtype, int64_t offset, int64_t numel);
  const std::string& path() const { return path_; }
  // The whole record `name` (e.g. "data.pkl"), whatever folder prefix the archive uses.
  std::string record(const std::string& name);
  // The byte size of record data/<key> (throws when missing).
  uint64_t record_bytes(const std::string& key) const;

 private:
  std::string path_;
  std::unique_ptr<ZipReader> zip_;
};

}  // namespace mtrain::trainer

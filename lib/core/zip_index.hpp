#pragma once
// The central directory of a zip file (the container of torch.save and torch.jit.save archives),
// read without trusting it: every count, size and offset is checked against the file before it
// is used, so a hostile file costs at most its directory in memory and time. ZIP64 records
// (archives over 4 GB) are followed. Torch-free, so the launcher can look inside a model file
// before any rank starts. Entries are read back stored or deflated (PyTorch 2.x deflates the
// code/ records of a TorchScript archive), never beyond the size the directory declares.
#include <cstdint>
#include <string>
#include <vector>

namespace mtrain {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;            // 0 stored, 8 deflate, …
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  uint64_t local_header_offset = 0;
};

struct ZipLimits {
  size_t max_entries = 1000000;      // far above any model (one record per tensor + code files)
  size_t max_directory_bytes = 256u << 20;
  size_t max_entry_read = 64u << 20;  // one code file or small record read into memory
};

class ZipIndex {
 public:
  // Opens `path` (O_NONBLOCK; it must be a regular file) and reads its central directory.
  // Throws mtrain::Error (exit 2) naming `path` and `what` ("TorchScript model", …) when the
  // file is not a zip, is truncated, or its directory lies about sizes or offsets.
  ZipIndex(const std::string& path, const std::string& what, const ZipLimits& limits = {});
  ~ZipIndex();
  ZipIndex(const ZipIndex&) = delete;
  ZipIndex& operator=(const ZipIndex&) = delete;

  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(const std::string& name) const;
  // The entry's bytes (stored or deflated), within limits.max_entry_read, else throws.
  std::string read(const ZipEntry& e) const;
  uint64_t file_size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, what_;
  ZipLimits limits_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::vector<ZipEntry> entries_;
};

}  // namespace mtrain

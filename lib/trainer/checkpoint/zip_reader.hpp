#pragma once
// The zip container of torch.save / torch::pickle_save files, read from untrusted bytes
// (torch-free, so that a fuzz target links it without LibTorch). Why our own and not LibTorch's
// PyTorchStreamReader (miniz): it inflated a deflated record whole (a 1 MB zip bomb peaked at
// 2.2 GB), its record offset was used to pread a deflated record as raw bytes (wrong weights,
// silently), and nothing compared a storage's size with its record's, so a short record read on
// into the next entry.
//
// What is checked, before anything is allocated from a number in the file: the end-of-central-
// directory record (zip64 too) lies inside the file, the central directory lies before it and
// holds at most size/46 entries; every entry's name is unique, unencrypted, stored (method 0,
// compressed size = size) — torch.save never compresses, so a compressed record is refused, not
// inflated; its local header and data lie inside the file and before the central directory.
// Records are then read by range (pread), never whole unless asked for (data.pkl), and a whole
// record is CRC-32 checked.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "mtrain/core/untrusted_file.hpp"

namespace mtrain::trainer {

struct ZipRecord {
  std::string name;            // without the archive's folder prefix ("data.pkl", "data/0")
  uint64_t header_offset = 0;  // of the local header
  uint64_t size = 0;           // bytes (stored: the same compressed and not)
  uint32_t crc32 = 0;
  uint16_t method = 0;
  uint64_t data_offset = 0;    // resolved from the local header on first use; 0 = not yet
};

class ZipReader {
 public:
  // Opens and indexes the archive. Throws mtrain::Error naming `path` and what is wrong.
  explicit ZipReader(std::string path);
  // Over bytes already in memory (the fuzz target): `path` only names them in messages.
  ZipReader(std::string path, std::string bytes);

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // The archive's folder prefix ("archive/" for torch.save, the file's stem for older files).
  const std::string& prefix() const { return prefix_; }
  // The record `name` (relative to the prefix), or nullptr.
  const ZipRecord* find(const std::string& name) const;
  const std::vector<ZipRecord>& records() const { return records_; }

  // The whole record, at most `limit` bytes (refused above), CRC-32 checked.
  std::string read_all(const std::string& name, uint64_t limit);
  // `n` bytes from byte `offset` of the record into `out`; refused when the range passes the
  // record's end (a storage declared larger than its record).
  void read_range(const std::string& name, uint64_t offset, uint64_t n, void* out);
  // The file offset of the record's first byte (checked against the file).
  uint64_t data_offset(const std::string& name);

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void index();
  bool pread(void* buf, uint64_t n, uint64_t off) const;
  ZipRecord& need(const std::string& name);

  std::string path_;
  UntrustedFile file_;
  std::string memory_;  // the bytes, when read from memory
  bool in_memory_ = false;
  uint64_t size_ = 0;
  uint64_t cd_offset_ = 0;
  std::string prefix_;
  std::vector<ZipRecord> records_;
  std::unordered_map<std::string, size_t> by_name_;
};

// CRC-32 (zip's polynomial), continued from `crc`.
uint32_t zip_crc32(uint32_t crc, const void* data, size_t n);

}  // namespace mtrain::trainer

#pragma once
// The zip container of PyTorch files (torch.save state dicts, tensors files, checkpoint shards,
// torch.jit.save archives), read from untrusted bytes. Torch-free, so that the launcher reads a
// TorchScript archive before any rank starts and a fuzz target links it without LibTorch. Why our
// own and not LibTorch's PyTorchStreamReader (miniz): it inflated a deflated record whole (a 1 MB
// zip bomb peaked at 2.2 GB), its record offset was used to pread a deflated record as raw bytes
// (wrong weights, silently), and nothing compared a storage's size with its record's, so a short
// record read on into the next entry.
//
// What is checked, before anything is allocated from a number in the file: the end-of-central-
// directory record (zip64 too) lies inside the file, the central directory lies before it and
// holds at most size/46 entries; every entry's name is unique and under the archive's folder, it
// is unencrypted, a stored entry's two sizes agree, its compressed bytes lie before the central
// directory, and so does its local header's data; no two entries share or overlap bytes (local
// header and data), and all deflated records of one reader inflate to kMaxInflatedBytes at most. Records are read by range (pread) in place —
// only stored records: a range of a compressed record has no place in the file, so tensor data
// that is compressed is refused (torch.save never compresses) — or whole (read_all: data.pkl,
// TorchScript code), where a deflated record is inflated with its output bounded by the size the
// directory declares and by the caller's limit (a zip bomb stops there), and the result is CRC-32
// checked.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/core/untrusted_file.hpp"

namespace mtrain {

// Which kind of PyTorch file the zip is, for messages: what it is called and what writes it.
struct ZipFormat {
  std::string what;    // "torch.save file"
  std::string writer;  // "torch.save(obj, path)"
};
inline const ZipFormat kTorchSaveZip{"torch.save file", "torch.save(obj, path)"};
inline const ZipFormat kTorchScriptZip{"TorchScript model", "torch.jit.save(torch.jit.script(module), path)"};

// 48 bytes a record (and 8 of index), its name in the reader's one name buffer (ZipReader::name):
// an archive that is all central directory (46 + name bytes an entry) then costs about its own
// size to index.
struct ZipRecord {
  uint64_t header_offset = 0;   // of the local header
  uint64_t size = 0;            // bytes once read (inflated)
  uint64_t compressed_size = 0; // bytes in the file (= size when stored)
  uint64_t data_offset = 0;     // resolved from the local header on first use; 0 = not yet
  uint64_t name_offset = 0;     // in the reader's name buffer
  uint32_t crc32 = 0;
  uint16_t name_size = 0;
  uint16_t method = 0;          // 0 stored, 8 deflate, … (others are refused when read)
};

class ZipReader {
 public:
  // Opens (open_untrusted: O_NONBLOCK, regular files only) and indexes the archive. Throws
  // mtrain::Error (exit 2) naming `path` and what is wrong.
  explicit ZipReader(std::string path, ZipFormat format = kTorchSaveZip);
  // Over bytes already in memory (the fuzz targets, tests): `path` only names them in messages.
  ZipReader(std::string path, std::string bytes, ZipFormat format = kTorchSaveZip);

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // The archive's folder prefix ("archive/" for torch.save, the file's stem for older files).
  const std::string& prefix() const { return prefix_; }
  // The record `name` (relative to the prefix), or nullptr.
  const ZipRecord* find(std::string_view name) const;
  const std::vector<ZipRecord>& records() const { return records_; }
  // A record's name, relative to the prefix ("data.pkl", "data/0"); valid while the reader lives.
  std::string_view name(const ZipRecord& r) const { return std::string_view(names_).substr(r.name_offset, r.name_size); }

  // The whole record, stored or deflated, refused when it is (or inflates to) more than `limit`
  // bytes or to other than the size its directory entry declares; CRC-32 checked.
  std::string read_all(const std::string& name, uint64_t limit);
  // The record `name` when its bytes can be read in place by read_range (stored); throws naming
  // the record and its method when it is compressed, or when it is missing.
  const ZipRecord& stored(const std::string& name);
  // `n` bytes from byte `offset` of a stored record into `out`; refused when the range passes
  // the record's end (a storage declared larger than its record).
  void read_range(const std::string& name, uint64_t offset, uint64_t n, void* out);

 private:
  struct Directory {
    uint64_t entries = 0, offset = 0, size = 0, end = 0;  // end: where the directory must stop
  };
  [[noreturn]] void fail(const std::string& what) const;
  void index();
  Directory find_directory();
  Directory read_zip64_end(uint64_t eocd_pos);
  uint64_t parse_entry(const unsigned char* c, uint64_t room, uint64_t i);
  void read_zip64_extra(const unsigned char* x, uint64_t len, std::string_view name, ZipRecord& r);
  void add_record(std::string_view full_name, ZipRecord r, uint64_t i);
  void sort_names();
  void check_disjoint();
  uint64_t next_record_offset(uint64_t header_offset) const;
  bool pread(void* buf, uint64_t n, uint64_t off) const;
  ZipRecord& need(const std::string& name);
  const unsigned char* directory_bytes(uint64_t at, uint64_t n);
  std::string inflate(const ZipRecord& r);

  std::string path_;
  ZipFormat format_;
  UntrustedFile file_;
  std::string memory_;  // the bytes, when read from memory
  bool in_memory_ = false;
  uint64_t size_ = 0;
  uint64_t cd_offset_ = 0;
  // The central directory is read through a window (index()), not whole: its size is the file's.
  std::vector<unsigned char> window_;
  uint64_t window_at_ = 0, cd_end_ = 0;
  std::string prefix_;
  std::vector<ZipRecord> records_;
  std::string names_;            // every record's name, back to back
  std::vector<uint32_t> sorted_; // record indices in name order (find's binary search)
  std::vector<uint32_t> by_offset_;  // record indices in file order (where each record must end)
  uint64_t inflated_ = 0;        // bytes inflated by read_all so far (kMaxInflatedBytes)
};

// The most all of an archive's deflated records may inflate to, together, in one reader: each
// record is bounded by its caller's limit (64 MiB for TorchScript code), but an archive of many
// deflated records multiplies it (deflate inflates up to ~1000x, so a 10 MB file could stand for
// 10 GB of code to inflate and scan). 256 MiB is the largest data.pkl the tensor reader takes
// (kMaxPickleBytes), hundreds of times the code of any real model (kilobytes per module), and about
// a second of inflating.
inline constexpr uint64_t kMaxInflatedBytes = 256ull << 20;

// CRC-32 (zip's polynomial), continued from `crc`.
uint32_t zip_crc32(uint32_t crc, const void* data, size_t n);

}  // namespace mtrain

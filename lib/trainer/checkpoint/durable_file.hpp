#pragma once
// Files that survive a crash or a full disk. A DurableWriter writes <path>.part with write(2),
// checksums what it writes (CRC-32C), and commit() fsyncs the file, renames it to <path> and
// fsyncs the folder, so after commit() returns the file is on disk under its final name; until
// then only a .part exists, which the destructor removes. A failed write (ENOSPC, EIO, …) is
// remembered and later bytes are dropped (the zip writer above must never see a short write:
// torch's writer throws from its destructor then), and commit() throws one paragraph naming the
// file, the error and how much was written.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "lib/core/unique_fd.hpp"

namespace mtrain::trainer {

class DurableWriter {
 public:
  explicit DurableWriter(std::string path);
  ~DurableWriter();
  DurableWriter(const DurableWriter&) = delete;
  DurableWriter& operator=(const DurableWriter&) = delete;

  void write(const void* data, size_t n);
  bool failed() const { return errno_ != 0; }
  uint64_t bytes() const { return bytes_; }
  uint32_t crc32c() const { return crc_; }
  const std::string& part() const { return part_; }
  // Called after every ~16 MiB written (e.g. to touch a heartbeat file during long writes).
  void on_progress(std::function<void()> f) { progress_ = std::move(f); }
  // fsync, rename to the final path, fsync the folder. Throws mtrain::Error on any failure.
  void commit();
  // Throws the write error (if any) without committing.
  void throw_if_failed() const;

 private:
  std::string path_, part_;
  UniqueFd fd_;
  int errno_ = 0;
  std::string failed_op_;
  uint64_t bytes_ = 0, since_progress_ = 0;
  uint32_t crc_ = 0;
  bool committed_ = false;
  std::function<void()> progress_;
};

// Creates `part` for writing with O_CREAT|O_EXCL|O_NOFOLLOW, so a symlink or a file someone
// else planted under that name is never written through: a regular file of our own (a killed
// run's leftover) is replaced; anything else throws mtrain::Error saying what it is. Returns
// the descriptor.
int create_part_file(const std::string& part);
// fsync a folder (so renames and new entries in it are durable). Throws mtrain::Error.
void fsync_dir(const std::string& dir);
// A small text file, durably (DurableWriter + commit).
void write_file_durably(const std::string& path, const std::string& text);
// Reads a whole file's size and CRC-32C in fixed-size chunks (no full copy in memory).
struct FileDigest {
  uint64_t bytes = 0;
  uint32_t crc32c = 0;
};
// Throws mtrain::Error naming the file when it cannot be read.
FileDigest digest_file(const std::string& path, const std::function<void()>& progress = {});

}  // namespace mtrain::trainer

#pragma once
// Opening a file a user downloaded or named (weights, token and tensors files, checkpoint shards)
// without trusting what is at the path. Why its own helper: open(2) on a FIFO blocks until a
// writer appears (a FIFO as --data-path hung the launcher forever), a character device such as
// /dev/zero reads without end, and std::filesystem's "exists"/"is_regular_file" lump every one of
// those into "does not exist". Here the file is opened O_NONBLOCK (a FIFO opens at once), its type
// is checked on the open descriptor (no race with a rename), and O_NONBLOCK is dropped again for
// the reads. Every refusal says what the path really is: "is a FIFO (named pipe), not a regular
// file", "is a symbolic link to /dev/zero, a character device, not a regular file".
#include <sys/types.h>

#include "lib/core/unique_fd.hpp"

#include <cstdint>
#include <string>
#include <utility>

namespace mtrain {

// "a regular file", "a FIFO (named pipe)", "a character device", "a folder", …
std::string file_type_name(unsigned mode);

// "" when `path` (links followed) is a regular file; otherwise what it is, as a predicate for a
// message: "does not exist", "is a FIFO (named pipe), not a regular file", "is a symbolic link to
// /dev/zero (a character device), not a regular file", "cannot be read (Permission denied)".
std::string not_regular_file(const std::string& path);

// An open, regular file. Move-only; closes on destruction.
class UntrustedFile {
 public:
  UntrustedFile() = default;

  int fd() const { return fd_.get(); }
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Reads exactly `n` bytes at `offset` (EINTR retried); false on a short read (the file shrank)
  // or an error (errno set).
  bool pread_exact(void* buf, uint64_t n, uint64_t offset) const;
  // Hands the descriptor to the caller (who closes it).
  int release() { return fd_.release(); }

 private:
  friend UntrustedFile open_untrusted(const std::string&, std::string*);
  UniqueFd fd_;
  uint64_t size_ = 0;
  std::string path_;
};

// Opens `path` for reading as above. On failure returns a file with fd() < 0 and sets *why to
// the predicate of not_regular_file ("is a FIFO (named pipe), not a regular file", …).
UntrustedFile open_untrusted(const std::string& path, std::string* why);

}  // namespace mtrain

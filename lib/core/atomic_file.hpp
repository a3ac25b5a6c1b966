#pragma once
// Replacing a file whole (the one way mtrain writes a file that others read while it runs: job
// and run records, error files, caches, bench results). The text goes to a temporary of a name
// nobody can guess beside the target (mkstemp: created O_EXCL, so a link planted at a predictable
// "<path>.tmp" is never followed and two writers never share one), every write and the close are
// checked (NFS and some FUSE file systems report a failed write only at close), then rename(2)
// puts it over the target: a reader sees the old file or the new one, never half; a symbolic link
// at the target is replaced, never followed. On any failure the temporary is removed and the
// target is as it was.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace mtrain {

struct AtomicWrite {
  unsigned mode = 0644;  // the new file's permission bits (exactly these: no umask)
  bool sync = false;  // fsync before the rename: the content survives the machine's crash
  // Stamped as the file's modification time (error files carry the failure's time there).
  std::optional<std::chrono::system_clock::time_point> mtime{};
};

// Every byte of `text` to `fd` (retrying short writes and EINTR): 0, or the errno of the write that
// failed (EIO for one that wrote nothing and said nothing).
int write_fully(int fd, std::string_view text) noexcept;

// 0, or the errno of the step that failed. Never throws: a failing rank must not fail again here.
int replace_file_atomically(const std::string& path, std::string_view text, const AtomicWrite& how = {}) noexcept;

}  // namespace mtrain

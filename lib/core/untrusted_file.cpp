#include "lib/core/untrusted_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace mtrain {

std::string file_type_name(unsigned mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

namespace {

// What the path is when it is not a regular file: a link is named with its target and the
// target's type, since "a link" alone hides that it points at /dev/zero.
std::string describe(const std::string& path, const struct stat& followed) {
  struct stat l {};
  if (::lstat(path.c_str(), &l) == 0 && S_ISLNK(l.st_mode)) {
    char target[PATH_MAX];
    const ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    const std::string t = n > 0 ? std::string(target, static_cast<size_t>(n)) : "?";
    return fmt::format("is a symbolic link to {} ({}), not a regular file", t,
                       file_type_name(followed.st_mode));
  }
  return fmt::format("is {}, not a regular file", file_type_name(followed.st_mode));
}

}  // namespace

std::string not_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int e = errno;
    struct stat l {};
    if (e == ENOENT && ::lstat(path.c_str(), &l) == 0) return "is a symbolic link to a missing file";
    if (e == ENOENT) return "does not exist";
    return fmt::format("cannot be read ({})", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) return describe(path, st);
  return "";
}

bool UntrustedFile::pread_exact(void* buf, uint64_t n, uint64_t offset) const {
  auto* p = static_cast<char*>(buf);
  uint64_t done = 0;
  while (done < n) {
    const ssize_t r = ::pread(fd_.get(), p + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (r == 0) errno = 0;
      return false;
    }
    done += static_cast<uint64_t>(r);
  }
  return true;
}

UntrustedFile open_untrusted(const std::string& path, std::string* why) {
  UntrustedFile f;
  f.path_ = path;
  // O_NONBLOCK: a FIFO without a writer opens at once instead of blocking this process forever.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd) {
    const int e = errno;
    std::string w = not_regular_file(path);
    if (w.empty()) w = fmt::format("cannot be opened ({})", std::strerror(e));
    if (why) *why = w;
    return f;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    const int e = errno;
    std::string w = not_regular_file(path);
    if (w.empty()) w = fmt::format("cannot be inspected ({})", std::strerror(e));
    if (why) *why = w;
    return f;
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  f.fd_ = std::move(fd);
  f.size_ = static_cast<uint64_t>(st.st_size);
  return f;
}

}  // namespace mtrain

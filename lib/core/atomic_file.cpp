#include "lib/core/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/unique_fd.hpp"

namespace mtrain {
namespace {

timespec to_timespec(std::chrono::system_clock::time_point t) noexcept {
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  return {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
}

}  // namespace

int write_fully(int fd, std::string_view text) noexcept {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t w = ::write(fd, text.data() + done, text.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno;
    if (w == 0) return EIO;
    done += static_cast<size_t>(w);
  }
  return 0;
}

int replace_file_atomically(const std::string& path, std::string_view text, const AtomicWrite& how) noexcept {
  try {
    std::string tmp = path + ".XXXXXX";
    UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
    if (!fd) return errno;
    int err = ::fchmod(fd.get(), how.mode) == 0 ? 0 : errno;
    if (err == 0) err = write_fully(fd.get(), text);
    if (err == 0 && how.mtime) {
      const timespec t = to_timespec(*how.mtime);
      const timespec times[2] = {t, t};
      if (::futimens(fd.get(), times) != 0) err = errno;
    }
    if (err == 0 && how.sync && ::fsync(fd.get()) != 0) err = errno;
    if (const int closed = fd.close(); closed != 0 && err == 0) err = closed;
    if (err == 0 && std::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
    if (err != 0) ::unlink(tmp.c_str());
    return err;
  } catch (...) {  // the temporary's name could not be allocated
    return ENOMEM;
  }
}

}  // namespace mtrain

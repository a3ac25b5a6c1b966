#include "lib/launch/console_write.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>

namespace mtrain::launch {

WriteResult write_all(int fd, const char* data, size_t n, const WriteFn& write) {
  while (n > 0) {
    ssize_t w = write ? write(fd, data, n) : ::write(fd, data, n);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {fd, POLLOUT, 0};
      int r;
      do r = ::poll(&p, 1, -1);
      while (r < 0 && errno == EINTR);
      if (r < 0) return WriteResult::Failed;
      continue;
    }
    if (w < 0 && errno == EPIPE) return WriteResult::Gone;
    if (w == 0) errno = EIO;  // no progress and no error: do not spin
    return WriteResult::Failed;
  }
  return WriteResult::Ok;
}

}  // namespace mtrain::launch

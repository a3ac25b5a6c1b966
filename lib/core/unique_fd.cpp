#include "lib/core/unique_fd.hpp"

#include <unistd.h>

#include <cerrno>

namespace mtrain {

UniqueFd& UniqueFd::operator=(UniqueFd&& other) noexcept {
  if (this != &other) reset(other.release());
  return *this;
}

UniqueFd::~UniqueFd() { reset(); }

int UniqueFd::release() noexcept {
  const int fd = fd_;
  fd_ = -1;
  return fd;
}

void UniqueFd::reset(int fd) noexcept {
  if (fd_ >= 0 && fd_ != fd) ::close(fd_);
  fd_ = fd;
}

int UniqueFd::close() noexcept {
  if (fd_ < 0) return 0;
  // Linux releases the descriptor even when close fails (EINTR included): never close again.
  const int rc = ::close(release());
  return rc == 0 ? 0 : errno;
}

void close_descriptor(int fd) noexcept { ::close(fd); }

}  // namespace mtrain

#pragma once
// Writing a whole buffer to a file descriptor that may be slow, interrupted or gone (issue 17,
// items 3 and 4). The launcher's signal handlers (Boost.Asio's) are installed without
// SA_RESTART, so a write() blocked on a slow console returns EINTR when SIGCHLD arrives; a pipe
// reader may take only part of a buffer; a console set O_NONBLOCK by someone sharing it answers
// EAGAIN; a console that went away answers EPIPE (SIGPIPE is ignored: launcher_signals.hpp).
#include <sys/types.h>

#include <cstddef>
#include <functional>

namespace mtrain::launch {

enum class WriteResult {
  Ok,      // every byte was written
  Gone,    // the reader went away (EPIPE): nothing more will ever be read
  Failed,  // another error (errno tells)
};

using WriteFn = std::function<ssize_t(int fd, const void* data, size_t n)>;

// Writes all `n` bytes: retries after EINTR, continues after a partial write, waits for
// POLLOUT after EAGAIN. `write` is ::write unless a test gives another.
WriteResult write_all(int fd, const char* data, size_t n, const WriteFn& write = {});

}  // namespace mtrain::launch

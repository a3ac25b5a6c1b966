#pragma once
// A file descriptor owned by one object: closed exactly once, when its owner goes (or earlier,
// through close(), where the result matters). Every descriptor mtrain opens lives in one, so no
// error path leaks a descriptor into a rank (they are close-on-exec too) or closes one twice —
// the second close of a number another thread has reused closes that thread's file.
//
// close() reports what ::close says. For a file written to it must be checked: NFS and some
// FUSE file systems report a failed write only there (durable_file.cpp, error_file.cpp). The
// destructor cannot report; it is for descriptors read from, and for error paths.
//
// close_descriptor() is for code between fork() and exec(), which owns no objects: the child
// closes the parent's descriptors by number, async-signal-safe.
namespace mtrain {

class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& other) noexcept : fd_(other.release()) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept;
  ~UniqueFd();

  int get() const noexcept { return fd_; }
  bool valid() const noexcept { return fd_ >= 0; }
  explicit operator bool() const noexcept { return valid(); }

  // Gives up ownership without closing (the descriptor now belongs to the caller).
  int release() noexcept;
  // Closes what it holds (ignoring the result) and takes `fd`.
  void reset(int fd = -1) noexcept;
  // Closes now: 0, or the errno of ::close (the descriptor is gone either way, as POSIX says
  // for Linux: never retried). 0 when it held nothing.
  int close() noexcept;

 private:
  int fd_ = -1;
};

// ::close for the child between fork() and exec(): async-signal-safe, result ignored.
void close_descriptor(int fd) noexcept;

}  // namespace mtrain

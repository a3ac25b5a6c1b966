#include "lib/trainer/checkpoint/durable_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/crc32c.hpp"
#include "lib/core/untrusted_file.hpp"

namespace mtrain::trainer {

namespace {

constexpr uint64_t kProgressEvery = 16ull << 20;

std::string hint_for(int e) {
  if (e == ENOSPC || e == EDQUOT) {
    return "free space (or quota) on the file system holding train.work_dir, or lower "
           "checkpoint.keep";
  }
  if (e == EACCES || e == EPERM || e == EROFS) return "make train.work_dir writable";
  return "check the file system holding train.work_dir";
}

}  // namespace

DurableWriter::DurableWriter(std::string path) : path_(std::move(path)), part_(path_ + ".part") {
  fd_.reset(create_part_file(part_));
}

int create_part_file(const std::string& part) {
  // O_EXCL|O_NOFOLLOW: never write through whatever already has the name (a symlink planted in a
  // shared folder would send our bytes into its target). An existing entry is removed only when
  // it is provably a leftover of ours (a regular file we own: a run killed before it could
  // clean up); removing a name never touches what it points to, so a retry is safe.
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    const int e = errno;
    struct stat st {};
    if (e != EEXIST || attempt > 0 || ::lstat(part.c_str(), &st) != 0) {
      throw RuntimeFailure(fmt::format("{}: cannot create ({})", part, std::strerror(e)), hint_for(e));
    }
    if (S_ISREG(st.st_mode) && st.st_uid == ::geteuid()) {
      ::unlink(part.c_str());
      continue;
    }
    std::string what = file_type_name(st.st_mode);
    if (S_ISLNK(st.st_mode)) {
      std::error_code ec;
      const auto target = std::filesystem::read_symlink(part, ec);
      if (!ec) what += fmt::format(" to {}", target.string());
    } else if (st.st_uid != ::geteuid()) {
      what += fmt::format(" owned by uid {}", st.st_uid);
    }
    throw RuntimeFailure(fmt::format("{} already exists and is {}; not writing through it", part, what),
                         "someone else put it there: check it, remove it if it is safe to, and run again "
                         "(mtrain writes <file>.part itself and renames it over <file>)");
  }
}

DurableWriter::~DurableWriter() {
  fd_.reset();
  if (!committed_) ::unlink(part_.c_str());
}

void DurableWriter::write(const void* data, size_t n) {
  if (errno_ != 0 || n == 0) return;
  crc_ = crc32c_update(crc_, data, n);
  const char* p = static_cast<const char*>(data);
  size_t left = n;
  while (left > 0) {
    const ssize_t w = ::write(fd_.get(), p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      errno_ = errno;
      failed_op_ = "write";
      return;
    }
    p += w;
    left -= static_cast<size_t>(w);
    bytes_ += static_cast<uint64_t>(w);
  }
  since_progress_ += n;
  if (since_progress_ >= kProgressEvery) {
    since_progress_ = 0;
    if (progress_) progress_();
  }
}

void DurableWriter::throw_if_failed() const {
  if (errno_ == 0) return;
  throw RuntimeFailure(
      fmt::format("{}: {} failed: {} (after {} bytes)", part_, failed_op_, std::strerror(errno_), bytes_),
      hint_for(errno_));
}

void DurableWriter::commit() {
  throw_if_failed();
  if (::fsync(fd_.get()) != 0) {
    errno_ = errno;
    failed_op_ = "fsync";
    throw_if_failed();
  }
  if (const int closed = fd_.close(); closed != 0) {
    errno_ = closed;
    failed_op_ = "close";
    throw_if_failed();
  }
  if (::rename(part_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    throw RuntimeFailure(fmt::format("{}: cannot rename to {} ({})", part_, path_, std::strerror(e)), hint_for(e));
  }
  committed_ = true;
  fsync_dir(std::filesystem::path(path_).parent_path().string());
}

void fsync_dir(const std::string& dir) {
  const std::string d = dir.empty() ? "." : dir;
  const UniqueFd fd(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    const int e = errno;
    throw RuntimeFailure(fmt::format("{}: cannot open the folder to sync it ({})", d, std::strerror(e)), hint_for(e));
  }
  const int rc = ::fsync(fd.get());
  const int e = errno;
  // Some file systems cannot fsync a folder (EINVAL); their renames are as durable as they get.
  if (rc != 0 && e != EINVAL) {
    throw RuntimeFailure(fmt::format("{}: fsync of the folder failed ({})", d, std::strerror(e)), hint_for(e));
  }
}

void write_file_durably(const std::string& path, const std::string& text) {
  DurableWriter w(path);
  w.write(text.data(), text.size());
  w.commit();
}

FileDigest digest_file(const std::string& path, const std::function<void()>& progress) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    const int e = errno;
    throw RuntimeFailure(fmt::format("{}: cannot open ({})", path, std::strerror(e)),
                         "the checkpoint is incomplete or damaged; resume from another one");
  }
  std::vector<char> buf(4 << 20);
  FileDigest d;
  uint64_t since = 0;
  for (;;) {
    const ssize_t r = ::read(fd.get(), buf.data(), buf.size());
    if (r < 0) {
      if (errno == EINTR) continue;
      const int e = errno;
      throw RuntimeFailure(fmt::format("{}: read failed after {} bytes ({})", path, d.bytes, std::strerror(e)),
                           "check the file system holding the checkpoint");
    }
    if (r == 0) break;
    d.crc32c = crc32c_update(d.crc32c, buf.data(), static_cast<size_t>(r));
    d.bytes += static_cast<uint64_t>(r);
    since += static_cast<uint64_t>(r);
    if (progress && since >= kProgressEvery) {
      since = 0;
      progress();
    }
  }
  return d;
}

}  // namespace mtrain::trainer

#include "lib/launch/run_folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::launch {

namespace {

std::string host_name() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string read_holder(int fd) {
  char buf[512];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return "";
  std::string s(buf, static_cast<size_t>(n));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

RunFolderLock::RunFolderLock(const std::string& folder, const std::string& job_id) {
  const std::string path = folder + "/launcher.lock";
  fd_.reset(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640));
  if (!fd_)
    throw UsageError(fmt::format("cannot open the run folder's lock {}: {}", path, std::strerror(errno)),
                     "Check --log-dir and its permissions.");
  int r;
  do r = flock(fd_.get(), LOCK_EX | LOCK_NB);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    int err = errno;
    std::string holder = read_holder(fd_.get());
    fd_.reset();
    if (err != EWOULDBLOCK)
      throw UsageError(fmt::format("cannot lock {}: {}", path, std::strerror(err)),
                       "Check --log-dir and its file system.");
    throw UsageError(
        fmt::format("job {} already has a live launcher writing to {} ({})", job_id, folder,
                    holder.empty() ? "holder unknown" : holder),
        "Two launches of one job id with the same --log-dir would overwrite each other's job.json and logs: "
        "give this launch its own --job-id (or another --log-dir), or wait for the other to end.");
  }
  char since[32] = "?";
  std::time_t now = std::time(nullptr);
  struct tm utc;
  if (gmtime_r(&now, &utc)) std::strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S UTC", &utc);
  std::string me = fmt::format("held by host {} pid {} since {}\n", host_name(), getpid(), since);
  if (ftruncate(fd_.get(), 0) != 0 || pwrite(fd_.get(), me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    // The lock itself holds; only the holder's description is missing.
  }
}

RunFolderLock::~RunFolderLock() = default;

void write_file_atomically(const std::string& path, const std::string& text, unsigned mode) {
  const std::string tmp = fmt::format("{}.tmp.{}", path, getpid());
  for (int tries = 0;; ++tries) {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode));
    if (!fd && errno == EEXIST && tries == 0) {
      ::unlink(tmp.c_str());  // left by a dead launcher that had our pid; unlink never follows a link
      continue;
    }
    if (!fd)
      throw UsageError(fmt::format("cannot write {}: {}", tmp, std::strerror(errno)),
                       "Check --log-dir (free space, permissions).");
    bool ok = fchmod(fd.get(), mode) == 0;
    size_t done = 0;
    while (ok && done < text.size()) {
      ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ok = false;
      else done += static_cast<size_t>(w);
    }
    int err = errno;
    if (const int closed = fd.close(); closed != 0 && ok) {
      ok = false;
      err = closed;
    }
    if (ok && ::rename(tmp.c_str(), path.c_str()) == 0) return;
    if (ok) err = errno;
    ::unlink(tmp.c_str());
    throw UsageError(fmt::format("cannot write {}: {}", path, std::strerror(err)),
                     "Check --log-dir (free space, permissions).");
  }
}

}  // namespace mtrain::launch

#include "lib/launch/run_folder_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <fmt/format.h>

#include "lib/core/atomic_file.hpp"
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
  AtomicWrite how;
  how.mode = mode;
  if (const int err = replace_file_atomically(path, text, how); err != 0)
    throw UsageError(fmt::format("cannot write {}: {}", path, std::strerror(err)),
                     "Check --log-dir (free space, permissions).");
}

}  // namespace mtrain::launch

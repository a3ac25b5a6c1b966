#pragma once
// One live launcher per run folder (issue 17, item 1). With --log-dir the run folder is
// <log-dir>/<job id>[/<node>], a name the user picks (or Slurm's job id): two launches of the
// same id used to share it, and with it job.json (the bundled trainer's settings, re-read by
// every restart) and the rank logs — one job trained the other's settings.
//
// The launcher holds an exclusive flock(2) on <run folder>/launcher.lock from before the first
// file it writes there until it exits; the file names the holder (host, pid, start time). A
// second launcher of the same folder fails at once (exit 2) naming the holder. The lock dies
// with its holder however it ends (SIGKILL included), so a stale lock never needs taking over;
// the file itself stays (removing it would race with a launcher that just opened it). flock
// works across nodes on NFSv4 and Lustre (Linux maps it to a POSIX lock on NFS).
#include <string>

#include "lib/core/unique_fd.hpp"

namespace mtrain::launch {

class RunFolderLock {
 public:
  // Takes the lock of `folder` (which exists) for `job_id`, or throws mtrain::Error (exit 2).
  RunFolderLock(const std::string& folder, const std::string& job_id);
  ~RunFolderLock();
  RunFolderLock(const RunFolderLock&) = delete;
  RunFolderLock& operator=(const RunFolderLock&) = delete;

 private:
  UniqueFd fd_;
};

// Writes `text` to `path` atomically: a new file (O_CREAT|O_EXCL|O_NOFOLLOW, `mode`) next to it,
// then rename(2) over `path`. A reader sees the old file or the new one, never a half; a
// symbolic link planted at `path` is replaced, never followed. Throws mtrain::Error.
void write_file_atomically(const std::string& path, const std::string& text, unsigned mode);

}  // namespace mtrain::launch

#pragma once
// One job per work dir. Two jobs writing one train.work_dir used to destroy each other's
// checkpoints (rank 0 deleted every .tmp_step_* it found, the other job's save in progress too)
// and interleave metrics. Rank 0 now holds <work_dir>/.mtrain.lock for the whole run:
//   * an flock(2) on it (released by the kernel when the process dies, however it dies; on NFS
//     the server's lease does the same across nodes), and
//   * the holder recorded in it — job id, host, pid, start time — with the file's mtime as a
//     heartbeat (touched every kHeartbeat), for file systems whose locks are node-local or absent.
// A second job refuses at once, naming the holder. A lock whose holder is dead — on this host: no
// process holds the flock (or, without flock, the pid is gone); on another host: no heartbeat
// for kLease — is taken over with a notice. Releasing empties the file (it stays: unlinking a
// locked file lets a third job lock a new inode while a second still waits on the old one).
//
// Torch-free (lib/core) so that both sides use one format and one rule: the trainer's rank 0
// takes the lock (`WorkDirLock::acquire`), and `mtrain launch`, starting the bundled trainer with
// rank 0 on this machine, checks it before any rank starts (`check_work_dir_free`): a second
// job fails in milliseconds with exit 2, not after its ranks have started.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

namespace mtrain {

struct LockHolder {
  std::string job_id, host, started;  // started: ISO-8601 UTC
  long pid = 0;
};
std::string holder_text(const LockHolder& h);                 // the file's content (one JSON line)
std::optional<LockHolder> parse_holder(const std::string& text);  // nullopt: empty or not ours
std::string describe_holder(const LockHolder& h);             // "job J (host H, pid P, since T)"

enum class FlockState { Got, Held, Unsupported };
struct LockDecision {
  bool take = false;
  std::string notice;  // take: "" or the takeover notice; refuse: why the holder counts as alive
};
// The decision, pure: what flock said, who is recorded, whether that pid runs here, how old the
// heartbeat is.
LockDecision decide_lock(FlockState flock, const std::optional<LockHolder>& recorded,
                         const std::string& my_host, bool recorded_pid_alive,
                         std::chrono::seconds heartbeat_age, std::chrono::seconds lease);

// The launcher's check, before any rank starts: throws the Error `WorkDirLock::acquire` would
// throw (exit 2, naming the holder) when a live job holds `work_dir`'s lock. Quiet when there is
// no lock file, when its holder is gone (rank 0 takes such a lock over, with its notice), or when
// the file cannot be read (rank 0 then says why). Creates and changes nothing; the flock it tries
// is shared and dropped at once, so that it also works on read-only NFS opens.
void check_work_dir_free(const std::string& work_dir);

class WorkDirLock {
 public:
  static constexpr std::chrono::seconds kHeartbeat{5};
  static constexpr std::chrono::seconds kLease{30};
  // Creates the work dir if needed and takes the lock, or throws mtrain::Error (exit 2) naming
  // the holder. `notice` receives the takeover notice of a stale lock, if any.
  static std::unique_ptr<WorkDirLock> acquire(const std::string& work_dir, const std::string& job_id,
                                              std::string* notice = nullptr);
  ~WorkDirLock();
  WorkDirLock(const WorkDirLock&) = delete;
  WorkDirLock& operator=(const WorkDirLock&) = delete;

 private:
  struct Impl;
  explicit WorkDirLock(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mtrain

#include "lib/core/work_dir_lock.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"

namespace mtrain {

namespace fs = std::filesystem;
using nlohmann::json;

std::string holder_text(const LockHolder& h) {
  return json{{"mtrain_work_dir_lock", 1}, {"job_id", h.job_id}, {"host", h.host}, {"pid", h.pid},
              {"started", h.started}}
             .dump() + "\n";
}

std::optional<LockHolder> parse_holder(const std::string& text) {
  if (text.find_first_not_of(" \n") == std::string::npos) return std::nullopt;
  try {
    const json j = parse_json_limited(text, ".mtrain.lock");
    if (!j.is_object() || !j.contains("mtrain_work_dir_lock")) return std::nullopt;
    LockHolder h;
    h.job_id = j.value("job_id", "");
    h.host = j.value("host", "");
    h.pid = j.value("pid", 0L);
    h.started = j.value("started", "");
    return h;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::string describe_holder(const LockHolder& h) {
  return fmt::format("job {} (host {}, pid {}, since {})", h.job_id.empty() ? "?" : h.job_id,
                     h.host, h.pid, h.started);
}

LockDecision decide_lock(FlockState flock, const std::optional<LockHolder>& recorded,
                         const std::string& my_host, bool recorded_pid_alive,
                         std::chrono::seconds heartbeat_age, std::chrono::seconds lease) {
  if (flock == FlockState::Held) return {false, "it holds the lock"};
  if (!recorded) return {true, ""};
  const std::string who = describe_holder(*recorded);
  if (recorded->host == my_host) {
    // flock worked and nobody holds it: the recorded process is gone (or is not the holder).
    if (flock == FlockState::Got || !recorded_pid_alive) {
      return {true, fmt::format("the work dir was locked by {}, which is no longer running; taking "
                                "the lock over", who)};
    }
    return {false, fmt::format("pid {} is running on this host", recorded->pid)};
  }
  if (heartbeat_age < lease) {
    return {false, fmt::format("its heartbeat is {} s old (a lock counts as abandoned after {} s)",
                               heartbeat_age.count(), lease.count())};
  }
  return {true, fmt::format("the work dir was locked by {}, whose heartbeat stopped {} s ago; "
                            "taking the lock over", who, heartbeat_age.count())};
}

namespace {

std::string this_host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string now_iso() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string read_fd(int fd) {
  std::string out;
  char buf[4096];
  for (off_t off = 0; out.size() < 65536;) {
    const ssize_t r = ::pread(fd, buf, sizeof buf, off);
    if (r <= 0) break;
    out.append(buf, static_cast<size_t>(r));
    off += r;
  }
  return out;
}

}  // namespace

struct WorkDirLock::Impl {
  UniqueFd fd;
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  std::thread heartbeat;
};

WorkDirLock::WorkDirLock(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

namespace {

// What the lock file says, seen through `fd` after trying its flock.
struct Inspection {
  std::optional<LockHolder> recorded;
  std::string host;
  LockDecision decision;
};

Inspection inspect(int fd, FlockState fl) {
  Inspection in;
  in.recorded = parse_holder(read_fd(fd));
  struct stat st {};
  ::fstat(fd, &st);
  const auto age = std::chrono::seconds(std::max<long>(0, std::time(nullptr) - st.st_mtime));
  in.host = this_host();
  const bool alive = in.recorded && in.recorded->pid > 0 &&
                     (::kill(static_cast<pid_t>(in.recorded->pid), 0) == 0 || errno == EPERM);
  in.decision = decide_lock(fl, in.recorded, in.host, alive, age, WorkDirLock::kLease);
  return in;
}

FlockState try_flock(int fd, int how) {
  if (::flock(fd, how | LOCK_NB) == 0) return FlockState::Got;
  return (errno == EWOULDBLOCK || errno == EAGAIN) ? FlockState::Held : FlockState::Unsupported;
}

[[noreturn]] void refuse(const std::string& work_dir, const std::string& path, const Inspection& in) {
  const std::string who = in.recorded ? describe_holder(*in.recorded) : "another process";
  throw Error(fmt::format("work dir {} is in use by {}: {}; two jobs in one work dir overwrite "
                          "each other's checkpoints and metrics",
                          work_dir, who, in.decision.notice),
              fmt::format("give this job its own --work-dir (train.work_dir), or wait for that "
                          "job to end (its lock: {})", path));
}

std::string lock_path(const std::string& work_dir) { return (fs::path(work_dir) / ".mtrain.lock").string(); }

}  // namespace

void check_work_dir_free(const std::string& work_dir) {
  const std::string path = lock_path(work_dir);
  // O_NONBLOCK: a FIFO planted at the name must not hang the launcher.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
  if (!fd) return;  // no lock yet (or unreadable: rank 0's acquire says why)
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  const Inspection in = inspect(fd.get(), try_flock(fd.get(), LOCK_SH));
  fd.reset();  // drops the shared flock, if we got it
  if (!in.decision.take) refuse(work_dir, path, in);
}

std::unique_ptr<WorkDirLock> WorkDirLock::acquire(const std::string& work_dir, const std::string& job_id,
                                                  std::string* notice) {
  std::error_code ec;
  fs::create_directories(work_dir, ec);
  const std::string path = lock_path(work_dir);
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd) {
    const int e = errno;
    throw Error(fmt::format("{}: cannot open the work-dir lock ({})", path, std::strerror(e)),
                "make train.work_dir a writable folder of yours (a symlink named .mtrain.lock is "
                "refused)");
  }
  const Inspection in = inspect(fd.get(), try_flock(fd.get(), LOCK_EX));
  const LockDecision& d = in.decision;
  if (!d.take) {
    fd.reset();
    refuse(work_dir, path, in);
  }
  const std::string& host = in.host;
  if (notice) *notice = d.notice;
  LockHolder me{job_id, host, now_iso(), static_cast<long>(::getpid())};
  const std::string text = holder_text(me);
  if (::ftruncate(fd.get(), 0) != 0 ||
      ::pwrite(fd.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const int e = errno;
    throw Error(fmt::format("{}: cannot record the lock's holder ({})", path, std::strerror(e)),
                "check the file system holding train.work_dir", kExitFailure);
  }
  ::fsync(fd.get());
  auto impl = std::make_unique<Impl>();
  impl->fd = std::move(fd);
  Impl* p = impl.get();
  // The heartbeat: the lock file's mtime, for hosts that cannot see our flock.
  p->heartbeat = std::thread([p] {
    std::unique_lock<std::mutex> lk(p->mu);
    while (!p->cv.wait_for(lk, kHeartbeat, [p] { return p->stop; })) ::futimens(p->fd.get(), nullptr);
  });
  return std::unique_ptr<WorkDirLock>(new WorkDirLock(std::move(impl)));
}

WorkDirLock::~WorkDirLock() {
  {
    std::lock_guard<std::mutex> lk(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  if (impl_->heartbeat.joinable()) impl_->heartbeat.join();
  if (::ftruncate(impl_->fd.get(), 0) != 0) {
    // Nothing to do: the flock goes with the close, and a stale record is taken over.
  }
  impl_->fd.reset();
}

}  // namespace mtrain

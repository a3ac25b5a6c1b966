#include "lib/trainer/comm/shm_collectives.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::trainer {

namespace {

constexpr uint64_t kMagic = 0x6d747261696e5348ULL;  // "mtrainSH"
constexpr size_t kLine = 64;
constexpr int64_t kMaxSlotFloats = int64_t{1} << 20;       // 4 MiB per slot
constexpr int64_t kSegmentFloats = int64_t{8} << 20;       // 32 MiB for all slots together
constexpr int64_t kMinSlotFloats = int64_t{16} << 10;      // 64 KiB

struct Header {
  uint64_t magic;
  uint64_t world;
  uint64_t chunk;
};

constexpr int kArrive = 0, kReduced = 1, kPid = 2;  // the three flag arrays

// `waiters` counts the ranks asleep on this flag (futex_wait on the low half of `seq`), so a
// publisher makes the wake-up system call only when someone sleeps.
struct alignas(kLine) Flag {
  std::atomic<uint64_t> seq;
  std::atomic<uint32_t> waiters;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory flags need lock-free atomics");
static_assert(sizeof(Flag) == kLine, "one cache line per flag");
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the futex word is the low half of a flag's seq");

// The futex word of a flag: the low 32 bits of its sequence number. The segment is a shared
// mapping, so the (non-private) futex is keyed by the page and reaches the other processes.
uint32_t* futex_word(const Flag* f) {
  return reinterpret_cast<uint32_t*>(const_cast<std::atomic<uint64_t>*>(&f->seq));
}

// Sleeps while the flag's low half still reads `seen` (or until `timeout`, or any wake-up).
void futex_sleep(const Flag* f, uint64_t seen, const struct timespec& timeout) {
  syscall(SYS_futex, futex_word(f), FUTEX_WAIT, static_cast<uint32_t>(seen), &timeout, nullptr, 0);
}

void futex_wake_all(const Flag* f) {
  syscall(SYS_futex, futex_word(f), FUTEX_WAKE, INT32_MAX, nullptr, nullptr, 0);
}

size_t flags_offset() { return kLine; }
size_t data_offset(int world) {
  const size_t end = flags_offset() + 3 * static_cast<size_t>(world) * sizeof(Flag);
  return (end + 4095) / 4096 * 4096;
}
size_t bytes(int64_t floats) { return static_cast<size_t>(floats) * sizeof(float); }

size_t segment_bytes(int world, int64_t chunk) {
  return data_offset(world) + static_cast<size_t>(world + 1) * static_cast<size_t>(chunk) * sizeof(float);
}

Flag* flag_at(void* base, int world, int which, int rank) {
  auto* flags = reinterpret_cast<Flag*>(static_cast<char*>(base) + flags_offset());
  return flags + static_cast<size_t>(which) * static_cast<size_t>(world) + static_cast<size_t>(rank);
}

float* slot_at(void* base, int world, int64_t chunk, int slot) {
  return reinterpret_cast<float*>(static_cast<char*>(base) + data_offset(world)) +
         static_cast<size_t>(slot) * static_cast<size_t>(chunk);
}

std::string segment_name() {
  std::random_device rd;
  return fmt::format("/mtrain-ar-{}-{:08x}{:08x}", getpid(), rd(), rd());
}

// Maps the named segment; `create` also sizes it (and reserves the pages, so a full /dev/shm
// fails here instead of with SIGBUS on first touch). nullptr when anything fails.
void* map_segment(const std::string& name, size_t bytes, bool create) {
  UniqueFd fd(shm_open(name.c_str(), create ? (O_RDWR | O_CREAT | O_EXCL) : O_RDWR, 0600));
  if (!fd) return nullptr;
  int err = 0;  // errno of the failing call (posix_fallocate returns it instead of setting it)
  if (create) {
    if (ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) err = errno;
    else err = posix_fallocate(fd.get(), 0, static_cast<off_t>(bytes));
  }
  void* p = err == 0 ? mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0) : MAP_FAILED;
  if (err == 0 && p == MAP_FAILED) err = errno;
  fd.reset();  // the mapping keeps the segment
  if (p == MAP_FAILED) {
    errno = err;
    return nullptr;
  }
  return p;
}

}  // namespace

std::unique_ptr<ShmCollectives> ShmCollectives::join(const ShmOptions& o, const ShmRendezvous& rdzv,
                                                     std::string* why) {
  std::string reason;
  int64_t chunk = o.chunk_floats;
  if (chunk <= 0) chunk = std::clamp(kSegmentFloats / (o.world + 1), kMinSlotFloats, kMaxSlotFloats);
  chunk = std::max<int64_t>(chunk, o.world);  // a reduce-scatter chunk holds at least one float per piece
  const size_t bytes = segment_bytes(o.world, chunk);
  void* base = nullptr;
  std::string name;
  if (o.rank == 0) {
    name = segment_name();
    base = map_segment(name, bytes, true);
    if (!base) {
      reason = fmt::format("cannot create a {} MiB segment in /dev/shm ({})", (bytes + (1u << 20) - 1) >> 20,
                           std::strerror(errno));
    }
    if (base) {
      auto* h = static_cast<Header*>(base);
      h->magic = kMagic;
      h->world = static_cast<uint64_t>(o.world);
      h->chunk = static_cast<uint64_t>(chunk);
    }
    rdzv.publish(base ? name : std::string());
  } else {
    name = rdzv.lookup();
    if (!name.empty()) base = map_segment(name, bytes, false);
    if (base) {
      const auto* h = static_cast<const Header*>(base);
      if (h->magic != kMagic || h->world != static_cast<uint64_t>(o.world) || h->chunk != static_cast<uint64_t>(chunk)) {
        munmap(base, bytes);
        base = nullptr;
      }
    }
  }
  if (base) flag_at(base, o.world, kPid, o.rank)->seq.store(static_cast<uint64_t>(getpid()), std::memory_order_release);
  const int ok = rdzv.count_ok(base != nullptr);
  // Every rank has mapped (or failed to map) it by now: the name is no longer needed.
  if (o.rank == 0 && !name.empty()) shm_unlink(name.c_str());
  if (ok != o.world) {
    if (base) munmap(base, bytes);
    if (why) {
      *why = !reason.empty() ? reason
                             : fmt::format("{} of {} ranks could not map the /dev/shm segment", o.world - ok, o.world);
    }
    return nullptr;
  }
  auto g = std::unique_ptr<ShmCollectives>(new ShmCollectives(o, base, bytes, chunk));
  // Watch peers' processes only where all of them are visible (one PID namespace), so a rank in
  // another namespace is never taken for dead.
  g->watch_pids_ = true;
  for (int q = 0; q < o.world; ++q) {
    const auto pid = static_cast<pid_t>(flag_at(base, o.world, kPid, q)->seq.load(std::memory_order_acquire));
    if (pid <= 0 || kill(pid, 0) != 0) g->watch_pids_ = false;
  }
  return g;
}

ShmCollectives::ShmCollectives(const ShmOptions& o, void* base, size_t bytes, int64_t chunk)
    : o_(o), base_(base), bytes_(bytes), chunk_(chunk) {
  thread_ = std::thread([this] { run(); });
}

ShmCollectives::~ShmCollectives() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  munmap(base_, bytes_);
}

std::shared_future<void> ShmCollectives::submit(Job j) {
  std::shared_future<void> f = j.done.get_future().share();
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(j));
  }
  cv_.notify_one();
  return f;
}

std::shared_future<void> ShmCollectives::all_reduce(float* data, int64_t n, std::shared_ptr<void> keep) {
  return submit(Job{Kind::AllReduce, data, data, n, std::move(keep), {}, {}});
}

std::shared_future<void> ShmCollectives::reduce_scatter(const float* in, float* out, int64_t k,
                                                        std::shared_ptr<void> keep) {
  return submit(Job{Kind::ReduceScatter, nullptr, out, k, std::move(keep), {}, {Piece{0, in, k * o_.world}}});
}

std::shared_future<void> ShmCollectives::reduce_scatter_pieces(std::vector<Piece> pieces, float* out, int64_t k,
                                                               std::shared_ptr<void> keep) {
  return submit(Job{Kind::ReduceScatter, nullptr, out, k, std::move(keep), {}, std::move(pieces)});
}

std::shared_future<void> ShmCollectives::all_gather(const float* in, float* out, int64_t k,
                                                    std::shared_ptr<void> keep) {
  return submit(Job{Kind::AllGather, in, out, k, std::move(keep), {}, {}});
}

void ShmCollectives::run() {
  for (;;) {
    Job j;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ with nothing left
      j = std::move(queue_.front());
      queue_.pop_front();
    }
    try {
      if (failed_) throw RuntimeFailure("an earlier shared-memory all_reduce failed; the ranks are out of step", "");
      switch (j.kind) {
        case Kind::AllReduce: all_reduce_now(j.out, j.n); break;
        case Kind::ReduceScatter: reduce_scatter_now(j.pieces, j.out, j.n); break;
        case Kind::AllGather: all_gather_now(j.in, j.out, j.n); break;
      }
      j.keep.reset();
      j.done.set_value();
    } catch (...) {
      failed_ = true;
      j.keep.reset();
      j.done.set_exception(std::current_exception());
    }
  }
}

void ShmCollectives::wait_all(int which, uint64_t seq, const char* phase) const {
  const auto deadline = std::chrono::steady_clock::now() + o_.timeout;
  for (int q = 0; q < o_.world; ++q) {
    const Flag* f = flag_at(base_, o_.world, which, q);
    const auto pid = static_cast<pid_t>(flag_at(base_, o_.world, kPid, q)->seq.load(std::memory_order_relaxed));
    // Spin briefly (the common case: peers are microseconds apart), yield the core a few times
    // (ranks usually share cores with their own compute threads), then sleep on the flag's futex
    // until its publisher wakes us — a rank that is still computing costs its waiting peers no
    // CPU time and no stream of sched_yield calls. Each sleep is bounded (1 ms) so the clock and
    // whether the peer's process still exists are checked (a killed rank would otherwise cost the
    // whole timeout; Gloo notices a dead peer at once through its closed socket).
    for (uint32_t spins = 0;; ++spins) {
      const uint64_t seen = f->seq.load(std::memory_order_acquire);
      if (seen >= seq) break;
      if (spins < 64) continue;
      if (spins < 80) {
        sched_yield();
        continue;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw RuntimeFailure(fmt::format("shared-memory all_reduce: rank {} did not reach step {} ({}) within {} s", q,
                                         seq, phase, o_.timeout.count() / 1000.0),
                             "check that every rank is alive and runs the same job; raise comm.timeout_s if steps are "
                             "legitimately slow");
      }
      if (watch_pids_ && spins % 64 == 0 && kill(pid, 0) != 0 && errno == ESRCH) {
        throw RuntimeFailure(
            fmt::format("shared-memory all_reduce: rank {} (pid {}) exited before step {} ({})", q, pid, seq, phase),
            "the launcher's report names why it exited");
      }
      // Registered as a waiter before the last look at seq: either that look sees the new
      // value, or the publisher (store, then load of waiters; both sequentially consistent)
      // sees the waiter and wakes it. futex_wait itself returns at once if seq moved meanwhile.
      auto& waiters = const_cast<std::atomic<uint32_t>&>(f->waiters);
      waiters.fetch_add(1, std::memory_order_seq_cst);
      if (f->seq.load(std::memory_order_seq_cst) < seq) {
        const struct timespec ts{0, 1000000};
        futex_sleep(f, seen, ts);
      }
      waiters.fetch_sub(1, std::memory_order_seq_cst);
    }
  }
}

// This rank reached `seq` in phase `which`; then wait until every rank has.
void ShmCollectives::publish_and_wait(int which, uint64_t seq, const char* phase) const {
  Flag* mine = flag_at(base_, o_.world, which, o_.rank);
  mine->seq.store(seq, std::memory_order_seq_cst);
  if (mine->waiters.load(std::memory_order_seq_cst) > 0) futex_wake_all(mine);
  wait_all(which, seq, phase);
}

// The protocol every collective shares (see the header): per chunk of `step` floats, fill this
// rank's slot, meet at "arrive", combine what the slots hold, meet at "reduced" (after which
// slots may be rewritten), then drain what only this rank reads (the result slot).
template <class Fill, class Combine, class Drain>
void ShmCollectives::chunked(int64_t total, int64_t step, Fill fill, Combine combine, Drain drain) {
  for (int64_t off = 0; off < total; off += step) {
    const int64_t len = std::min(step, total - off);
    const uint64_t seq = ++seq_;
    fill(off, len);
    publish_and_wait(kArrive, seq, "arrive");
    combine(off, len);
    publish_and_wait(kReduced, seq, "reduce");
    drain(off, len);
  }
}

float* ShmCollectives::slot(int q) const { return slot_at(base_, o_.world, chunk_, q); }

// dst[0, len) = Σ_q slot q[at, at + len), in rank order: every rank gets the same bits.
void ShmCollectives::sum_slots(float* dst, int64_t at, int64_t len) const {
  std::memcpy(dst, slot(0) + at, bytes(len));
  for (int q = 1; q < o_.world; ++q) {
    const float* src = slot(q) + at;
    for (int64_t i = 0; i < len; ++i) dst[i] += src[i];
  }
}

void ShmCollectives::all_reduce_now(float* data, int64_t n) {
  const int world = o_.world, rank = o_.rank;
  float* result = slot(world);
  chunked(
      n, chunk_, [&](int64_t off, int64_t len) { std::memcpy(slot(rank), data + off, bytes(len)); },
      [&](int64_t, int64_t len) {
        const int64_t b = len * rank / world, e = len * (rank + 1) / world;
        sum_slots(result + b, b, e - b);
      },
      [&](int64_t off, int64_t len) { std::memcpy(data + off, result, bytes(len)); });
}

namespace {
// dst[0, len) = input[at, at + len) of an input given as sorted pieces (zeros between them).
void copy_from_pieces(float* dst, const std::vector<ShmCollectives::Piece>& pieces, int64_t at, int64_t len) {
  // The first piece that ends after `at`.
  auto it = std::upper_bound(pieces.begin(), pieces.end(), at,
                             [](int64_t v, const ShmCollectives::Piece& p) { return v < p.offset + p.numel; });
  const int64_t end = at + len;
  int64_t pos = at;
  for (; it != pieces.end() && it->offset < end; ++it) {
    if (it->offset > pos) std::memset(dst + (pos - at), 0, bytes(it->offset - pos));
    const int64_t b = std::max(pos, it->offset), e = std::min(end, it->offset + it->numel);
    std::memcpy(dst + (b - at), it->data + (b - it->offset), bytes(e - b));
    pos = e;
  }
  if (pos < end) std::memset(dst + (pos - at), 0, bytes(end - pos));
}
}  // namespace

void ShmCollectives::reduce_scatter_now(const std::vector<Piece>& in, float* out, int64_t k) {
  const int world = o_.world, rank = o_.rank;
  const int64_t part = chunk_ / world;  // floats of each piece per chunk (chunk_ >= world)
  chunked(
      k, part,
      [&](int64_t off, int64_t len) {
        for (int q = 0; q < world; ++q) copy_from_pieces(slot(rank) + q * part, in, q * k + off, len);
      },
      [&](int64_t off, int64_t len) { sum_slots(out + off, rank * part, len); }, [](int64_t, int64_t) {});
}

void ShmCollectives::all_gather_now(const float* in, float* out, int64_t k) {
  const int world = o_.world, rank = o_.rank;
  chunked(
      k, chunk_, [&](int64_t off, int64_t len) { std::memcpy(slot(rank), in + off, bytes(len)); },
      [&](int64_t off, int64_t len) {
        for (int q = 0; q < world; ++q) std::memcpy(out + q * k + off, slot(q), bytes(len));
      },
      [](int64_t, int64_t) {});
}

}  // namespace mtrain::trainer

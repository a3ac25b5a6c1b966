#pragma once
// All-reduce (sum), reduce-scatter (sum) and all-gather of fp32 buffers through one POSIX
// shared-memory segment, for a group whose ranks all run on one host. Gloo moves the same bytes
// through TCP on the loopback (each byte copied through the kernel twice per ring step, plus
// Gloo's staging; 1.13 emulates reduce-scatter with an all-to-all into a second full buffer);
// here every rank copies its buffer in once and reads what it needs out once.
//
// Segment: a header, two sequence flags per rank ("arrived", "reduced"; one cache line each) and
// its pid (so a wait notices a peer that died), N
// input slots and one result slot of `chunk` floats. A buffer goes through in chunks; chunk s:
//   1. rank r copies its chunk into slot r, then publishes arrived[r] = s (release);
//   2. waits until every arrived[q] >= s (acquire);
//   3. sums its slice (an even split of the chunk) of slots 0..N-1, in rank order, into the
//      result slot — every element is summed by one rank in one order, so all ranks get the
//      same bits — then publishes reduced[r] = s;
//   4. waits until every reduced[q] >= s, and copies the result slot out.
// Reduce-scatter: a chunk holds the same range of each of the N pieces (piece q in slot part q);
// rank r sums part r of every slot straight into its output, then publishes reduced. All-gather:
// rank r copies its chunk into slot r; after "arrived" each rank copies every slot into its
// output, then publishes reduced. In both, a slot is rewritten only after every rank published
// reduced for the chunk before, i.e. finished reading it.
// Why no slot is overwritten while a peer still reads it: slot r is rewritten (chunk s+1, step 1)
// only after every rank published reduced >= s, i.e. finished reading the slots of chunk s; the
// result slot is rewritten (s+1, step 3) only after every rank published arrived >= s+1, which a
// rank does after it copied the result of chunk s out.
//
// Collectives are queued to one thread per group and run in submission order, so every rank
// must submit the same sequence (as with any collective). Every wait is bounded by the timeout:
// a rank that never arrives fails the others' futures with an error naming it.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mtrain::trainer {

struct ShmOptions {
  int rank = 0;
  int world = 1;
  std::chrono::milliseconds timeout{300000};
  int64_t chunk_floats = 0;  // floats per slot; 0: up to 4 MiB per slot, 32 MiB for the segment
};

// How the ranks agree on the segment: rank 0 publishes its name, the others look it up, and
// `count_ok(ok)` adds each rank's success to a shared count and returns the total once every
// rank has added (the group uses the segment only if all N opened it).
struct ShmRendezvous {
  std::function<void(const std::string&)> publish;
  std::function<std::string()> lookup;
  std::function<int(bool)> count_ok;
};

class ShmCollectives {
 public:
  // Collective. Returns nullptr on every rank when any rank could not create or map the segment
  // (no /dev/shm, too small): the caller keeps using its network backend. The segment's name is
  // unlinked as soon as all ranks have mapped it, so nothing is left in /dev/shm after a crash.
  // `why` (optional) receives the reason on failure, e.g. "cannot create a 32 MiB segment in
  // /dev/shm (No space left on device)", so the caller can say once why it fell back.
  static std::unique_ptr<ShmCollectives> join(const ShmOptions& o, const ShmRendezvous& rdzv,
                                              std::string* why = nullptr);
  ~ShmCollectives();
  ShmCollectives(const ShmCollectives&) = delete;
  ShmCollectives& operator=(const ShmCollectives&) = delete;

  // Each queues one collective; `keep` is held until it is done. The future is ready when it is
  // done, or carries the error (mtrain::Error) when a peer timed out or died.
  // data[0, n) = Σ_ranks data[0, n).
  std::shared_future<void> all_reduce(float* data, int64_t n, std::shared_ptr<void> keep);
  // out[0, k) = Σ_ranks in[rank·k, (rank+1)·k).
  std::shared_future<void> reduce_scatter(const float* in, float* out, int64_t k, std::shared_ptr<void> keep);
  // out[q·k, (q+1)·k) = rank q's in[0, k).
  std::shared_future<void> all_gather(const float* in, float* out, int64_t k, std::shared_ptr<void> keep);
  // A piece of a reduce-scatter input given in place: elements [offset, offset + numel) of the
  // world·k-element input are data[0, numel).
  struct Piece {
    int64_t offset;
    const float* data;
    int64_t numel;
  };
  // reduce_scatter of the input the pieces make up (sorted by offset, not overlapping; elements
  // no piece covers are zero), read straight from the pieces: a strategy's gradients reach the
  // slots without first being flattened into one buffer (one copy of the unit fewer).
  std::shared_future<void> reduce_scatter_pieces(std::vector<Piece> pieces, float* out, int64_t k,
                                                 std::shared_ptr<void> keep);

  int64_t chunk_floats() const { return chunk_; }

 private:
  enum class Kind { AllReduce, ReduceScatter, AllGather };
  struct Job {
    Kind kind;
    const float* in;
    float* out;
    int64_t n;
    std::shared_ptr<void> keep;
    std::promise<void> done;
    std::vector<Piece> pieces;  // ReduceScatter's input (a flat input is one piece); `in` unused
  };
  ShmCollectives(const ShmOptions& o, void* base, size_t bytes, int64_t chunk);
  void run();
  std::shared_future<void> submit(Job j);
  void all_reduce_now(float* data, int64_t n);
  void reduce_scatter_now(const std::vector<Piece>& in, float* out, int64_t k);
  void all_gather_now(const float* in, float* out, int64_t k);
  void wait_all(int flag, uint64_t seq, const char* phase) const;
  void publish_and_wait(int flag, uint64_t seq, const char* phase) const;
  template <class Fill, class Combine, class Drain>
  void chunked(int64_t total, int64_t step, Fill fill, Combine combine, Drain drain);
  float* slot(int q) const;
  void sum_slots(float* dst, int64_t at, int64_t len) const;

  ShmOptions o_;
  void* base_;
  size_t bytes_;
  int64_t chunk_;
  uint64_t seq_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool stop_ = false;
  bool failed_ = false;  // after a timeout the peers are out of step: fail every later call
  bool watch_pids_ = false;
  std::thread thread_;
};

}  // namespace mtrain::trainer

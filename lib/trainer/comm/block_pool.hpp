#pragma once
// Large CPU memory kept for reuse: the sharded engine's gathered units and flat reduction buffers,
// and (train.cpu_memory_pool) every large CPU tensor LibTorch allocates. A training step frees and
// re-allocates the same sizes many times; glibc maps blocks this large straight from the system and
// unmaps them on free, so every re-allocation would fault in and zero tens of MB again — more
// system time than arithmetic on the CPU.
//
// Protocol (the caching allocator of PyTorch's CUDA backend, for CPU pages):
// * Memory is taken from `raw` in segments. A segment is cut into blocks; a block handed out by
//   allocate() goes back when its DataPtr is destroyed, and merges with free neighbours in its
//   segment, so a segment whose blocks are all back is one free block again.
// * allocate(n) rounds n up to kBlockRound and takes the smallest free block that holds it (best
//   fit), splitting off the rest when at least kMinSplit remains. Any resident free memory serves,
//   whatever size it was freed with: units of different sizes share the same pages.
// * Only when no free block holds n is a fresh segment mapped (Stats::fresh counts them).
// Bound: the memory the pool holds (in use + idle) stays under the high-water mark of the memory in
// use at once — before a fresh segment is mapped, wholly free segments (largest first) are given
// back until held + the new one fit under that mark. Idle memory inside a segment that is partly
// in use cannot be given back; it is reused first instead. trim_to() gives free segments back on
// demand (torch.cuda.empty_cache's counterpart). docs/architecture.md §6.
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

namespace mtrain::trainer {

class BlockPool {
 public:
  struct Stats {
    size_t in_use = 0;      // bytes handed out and not yet given back (rounded sizes)
    size_t idle = 0;        // bytes held and free for reuse
    size_t high_water = 0;  // most bytes ever in use at once
    size_t fresh = 0;       // segments taken from `raw` (the misses)
    size_t segments = 0;    // segments held now
  };
  // Sizes are rounded to whole pages; a block is split only when the rest is a useful block itself.
  static constexpr size_t kBlockRound = size_t{4} << 10;
  static constexpr size_t kMinSplit = size_t{1} << 20;

  // `raw` allocates the segments (the CPU allocator for the process-wide pool).
  explicit BlockPool(c10::Allocator* raw) : raw_(raw) {}
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool();  // every block must have been given back

  // At least `nbytes` (64-byte aligned; whole pages from the start of its segment).
  at::DataPtr allocate(size_t nbytes);
  Stats stats() const;
  // Gives wholly free segments back, largest first, until at most `idle_bytes` stay idle (or none
  // is wholly free).
  void trim_to(size_t idle_bytes);
  void trim() { trim_to(0); }

  // The process-wide pool of CPU blocks; never destroyed (storages may be freed at exit).
  static BlockPool& cpu();

 private:
  struct Segment;
  // A piece of a segment: handed out, or free (then in free_). Neighbours in address order.
  struct Block {
    Segment* seg;
    char* ptr;
    size_t size;
    bool free;
    Block* prev;
    Block* next;
  };
  struct Segment {
    BlockPool* pool;
    at::DataPtr raw;
    size_t size;
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  static void give_back(void* ctx);
  void put_back(Block* b);
  void merge_into(Block* left, Block* right);  // right (free, next to left) joins left; under mu_
  Block* take(Block* b, size_t nbytes);  // marks b in use, splitting off the rest; under mu_
  // Removes wholly free segments, largest first, while `more()` says so; under mu_. The caller
  // frees the returned segments outside the lock.
  template <class More>
  std::vector<std::unique_ptr<Segment>> release_free_segments(More more);

  c10::Allocator* raw_;
  mutable std::mutex mu_;
  std::set<Block*, BySizeThenAddress> free_;
  std::vector<std::unique_ptr<Segment>> segments_;
  size_t held_ = 0;
  Stats stats_;
};

// A 1-D CPU tensor of `numel` elements whose memory comes from BlockPool::cpu() when it is large
// (>= kPooledMinBytes; smaller ones and other devices: at::empty). Contents undefined.
constexpr size_t kPooledMinBytes = size_t{1} << 20;
at::Tensor pooled_empty(int64_t numel, const at::TensorOptions& opts);

// Makes BlockPool::cpu() the memory of every CPU tensor of at least kPooledMinBytes (train.
// cpu_memory_pool): autograd's gradients, activations, optimiser temporaries, not only the sharded
// engine's own buffers. Why: a step allocates and frees the same sizes every time (the sharded
// strategies' per-parameter .grad, which is flattened and dropped, above all), and glibc serves
// blocks this large with fresh mappings, so each one was faulted in and zeroed again every step.
// Process-wide and idempotent; smaller allocations go to LibTorch's own CPU allocator.
void install_pooled_cpu_allocator();
// Whether install_pooled_cpu_allocator() ran in this process.
bool pooled_cpu_allocator_installed();

}  // namespace mtrain::trainer

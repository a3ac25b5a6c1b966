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
//
// This core includes no LibTorch header (target mtrain_shm, run under the sanitizers);
// comm/pooled_cpu.hpp makes LibTorch's CPU tensors take their memory from it.
#include <cstddef>
#include <functional>
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

  // Where segments come from: `take(n)` returns n bytes, 64-byte aligned (or throws), `give(p)`
  // takes back what `take` returned.
  struct Source {
    std::function<void*(size_t)> take;
    std::function<void(void*)> give;
  };
  // A block handed out: its memory, and the context that give_back() takes exactly once (the
  // shape of a deleter with context, so a LibTorch DataPtr can own the block).
  struct Lease {
    void* data;
    void* ctx;
  };

  explicit BlockPool(Source raw) : raw_(std::move(raw)) {}
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool();  // every block must have been given back

  // At least `nbytes` (64-byte aligned; whole pages from the start of its segment).
  Lease allocate(size_t nbytes);
  // Returns a block of some pool to it (thread-safe).
  static void give_back(void* ctx);
  Stats stats() const;
  // Gives wholly free segments back, largest first, until at most `idle_bytes` stay idle (or none
  // is wholly free).
  void trim_to(size_t idle_bytes);
  void trim() { trim_to(0); }

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
    void* base;
    size_t size;
    Segment(BlockPool* p, void* b, size_t n) : pool(p), base(b), size(n) {}
    Segment(const Segment&) = delete;
    Segment& operator=(const Segment&) = delete;
    ~Segment() { pool->raw_.give(base); }
  };
  struct BySizeThenAddress {
    bool operator()(const Block* a, const Block* b) const {
      return a->size != b->size ? a->size < b->size : a->ptr < b->ptr;
    }
  };
  void put_back(Block* b);
  void merge_into(Block* left, Block* right);  // right (free, next to left) joins left; under mu_
  Block* take(Block* b, size_t nbytes);  // marks b in use, splitting off the rest; under mu_
  // Removes wholly free segments, largest first, while `more()` says so; under mu_. The caller
  // frees the returned segments outside the lock.
  template <class More>
  std::vector<std::unique_ptr<Segment>> release_free_segments(More more);

  Source raw_;
  mutable std::mutex mu_;
  std::set<Block*, BySizeThenAddress> free_;
  std::vector<std::unique_ptr<Segment>> segments_;
  size_t held_ = 0;
  Stats stats_;
};

// Segments from the C++ heap (std::aligned_alloc, 64-byte aligned).
BlockPool::Source heap_segments();

}  // namespace mtrain::trainer

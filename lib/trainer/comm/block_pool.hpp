#pragma once
// Large CPU blocks kept for reuse by the sharded engine (gathered units, flat reduction buffers,
// export gathers). Those buffers are freed and re-allocated several times a step with the sizes of
// the same units; glibc maps blocks this large straight from the system and unmaps them on free,
// so every re-allocation would fault in and zero tens of MB again.
//
// A block handed out by allocate() goes back to the pool when its DataPtr is destroyed (the
// storage freed or its memory released), and a later allocate() takes the smallest idle block that
// holds it, if that block is at most twice its size (it is already resident; mapping a new one
// would fault it in again).
// Bound: the memory the pool holds (in use + idle) never exceeds the high-water mark of the memory
// in use at once — before a fresh block is allocated, idle blocks (largest first) are freed until
// in use + idle + the new block fit under that mark. So the pool costs no more resident memory
// than the largest set of blocks the program ever used together, whichever sizes are kept.
// A user that knows its next phase needs less (the sharded engine after a backward: the next
// forward uses only what the last forward did) trims the idle blocks down with trim_to().
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace mtrain::trainer {

class BlockPool {
 public:
  struct Stats {
    size_t in_use = 0;      // bytes handed out and not yet given back
    size_t idle = 0;        // bytes kept for reuse
    size_t high_water = 0;  // most bytes ever in use at once
    size_t fresh = 0;       // blocks allocated from `raw` (the misses)
    size_t window_high_water = 0;  // most bytes in use at once since begin_window()
  };
  // `raw` allocates the blocks (the CPU allocator for the process-wide pool).
  explicit BlockPool(c10::Allocator* raw) : raw_(raw) {}
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;
  ~BlockPool();  // every block must have been given back

  // A block of at least `nbytes`: the smallest idle one of at most 2·nbytes, else a fresh one.
  at::DataPtr allocate(size_t nbytes);
  Stats stats() const;
  // Starts a new window for Stats::window_high_water (e.g. one forward pass).
  void begin_window();
  // Frees idle blocks, largest first, until at most `idle_bytes` stay idle.
  void trim_to(size_t idle_bytes);
  void trim() { trim_to(0); }

  // The process-wide pool of CPU blocks; never destroyed (storages may be freed at exit).
  static BlockPool& cpu();

 private:
  // One block: the raw allocation, and the pool it returns to.
  struct Held {
    BlockPool* pool;
    at::DataPtr raw;
    size_t nbytes;
  };
  static void give_back(void* ctx);
  void put_back(Held* h);

  c10::Allocator* raw_;
  mutable std::mutex mu_;
  std::multimap<size_t, std::unique_ptr<Held>> idle_;
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
// blocks this large with fresh mappings, so each one was faulted in and zeroed again every step —
// more system time than arithmetic on the CPU. The bound of BlockPool holds for all of them: the
// process never keeps more than the most large-block memory it had in use at once.
// Process-wide and idempotent; smaller allocations go to LibTorch's own CPU allocator.
void install_pooled_cpu_allocator();
// Whether install_pooled_cpu_allocator() ran in this process.
bool pooled_cpu_allocator_installed();

}  // namespace mtrain::trainer

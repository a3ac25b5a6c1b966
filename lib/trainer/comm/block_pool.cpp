// Protocol in block_pool.hpp.
#include "mtrain/trainer/comm/block_pool.hpp"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <unordered_map>
#include <vector>

namespace mtrain::trainer {

BlockPool::~BlockPool() = default;

BlockPool& BlockPool::cpu() {
  // LibTorch's own allocator, even once install_pooled_cpu_allocator() replaced the current one.
  static BlockPool* p = new BlockPool(c10::GetDefaultCPUAllocator());
  return *p;
}

void BlockPool::give_back(void* ctx) {
  auto* h = static_cast<Held*>(ctx);
  h->pool->put_back(h);
}

void BlockPool::put_back(Held* h) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use -= h->nbytes;
  stats_.idle += h->nbytes;
  idle_.emplace(h->nbytes, std::unique_ptr<Held>(h));
}

at::DataPtr BlockPool::allocate(size_t nbytes) {
  std::unique_ptr<Held> h;
  std::vector<std::unique_ptr<Held>> evicted;  // freed outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest idle block that holds `nbytes` without wasting more than half of it: already
    // resident memory, where evicting to map a fresh block would fault it in again.
    auto it = idle_.lower_bound(nbytes);
    if (it != idle_.end() && it->first <= 2 * nbytes) {
      h = std::move(it->second);
      nbytes = it->first;
      idle_.erase(it);
      stats_.idle -= nbytes;
    } else {
      // Keep in use + idle under the high-water mark: free the largest idle blocks first.
      while (!idle_.empty() && stats_.in_use + stats_.idle + nbytes > stats_.high_water) {
        auto last = std::prev(idle_.end());
        stats_.idle -= last->first;
        evicted.push_back(std::move(last->second));
        idle_.erase(last);
      }
      ++stats_.fresh;
    }
    stats_.in_use += nbytes;
    stats_.high_water = std::max(stats_.high_water, stats_.in_use);
    stats_.window_high_water = std::max(stats_.window_high_water, stats_.in_use);
  }
  evicted.clear();
  if (!h) h.reset(new Held{this, raw_->allocate(nbytes), nbytes});
  const c10::Device dev = h->raw.device();
  void* data = h->raw.get();
  return at::DataPtr(data, h.release(), &BlockPool::give_back, dev);
}

BlockPool::Stats BlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void BlockPool::begin_window() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.window_high_water = stats_.in_use;
}

void BlockPool::trim_to(size_t idle_bytes) {
  std::vector<std::unique_ptr<Held>> gone;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  while (!idle_.empty() && stats_.idle > idle_bytes) {
    auto last = std::prev(idle_.end());
    stats_.idle -= last->first;
    gone.push_back(std::move(last->second));
    idle_.erase(last);
  }
}

at::Tensor pooled_empty(int64_t numel, const at::TensorOptions& opts) {
  at::Tensor t = at::empty({0}, opts);
  const size_t nbytes = static_cast<size_t>(numel) * t.element_size();
  if (!t.device().is_cpu() || nbytes < kPooledMinBytes) return at::empty({numel}, opts);
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(BlockPool::cpu().allocate(nbytes));
  s->set_nbytes(nbytes);
  t.set_(t.storage(), 0, {numel}, {1});
  return t;
}

namespace {

// The CPU allocator LibTorch calls for every CPU tensor once installed. A DataPtr's context is
// its data pointer (the pool's block is kept in a map meanwhile): oneDNN and others use the CPU
// allocator's raw_allocate/raw_deallocate, which need exactly that.
// No member is marked `override`: c10::Allocator::allocate is const in LibTorch 1.13 and not in
// 2.x, which also adds copy_data; defining both allocate overloads and copy_data compiles, and
// overrides what the base declares, against either.
class PooledCpuAllocator final : public c10::Allocator {
 public:
  explicit PooledCpuAllocator(c10::Allocator* raw) : raw_(raw) {}

  at::DataPtr allocate(size_t nbytes) const { return take(nbytes); }
  at::DataPtr allocate(size_t nbytes) { return take(nbytes); }
  c10::DeleterFnPtr raw_deleter() const { return &PooledCpuAllocator::release; }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    if (count) std::memcpy(dest, src, count);
  }

 private:
  at::DataPtr take(size_t nbytes) const {
    if (nbytes < kPooledMinBytes) return raw_->allocate(nbytes);  // context == data as well
    at::DataPtr block = BlockPool::cpu().allocate(nbytes);
    void* data = block.get();
    const c10::Device dev = block.device();
    {
      std::lock_guard<std::mutex> lock(mu());
      held().emplace(data, std::move(block));
    }
    return at::DataPtr(data, data, &PooledCpuAllocator::release, dev);
  }

  // Also the raw deleter: a pointer the pool did not hand out is LibTorch's allocator's.
  static void release(void* data) {
    at::DataPtr block;
    {
      std::lock_guard<std::mutex> lock(mu());
      auto it = held().find(data);
      if (it != held().end()) {
        block = std::move(it->second);
        held().erase(it);
      }
    }
    if (!block) {
      if (c10::DeleterFnPtr d = c10::GetDefaultCPUAllocator()->raw_deleter()) d(data);
    }
    // `block` goes back to the pool here, outside the lock.
  }
  static std::mutex& mu() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::unordered_map<void*, at::DataPtr>& held() {
    static auto* h = new std::unordered_map<void*, at::DataPtr>;
    return *h;
  }

  c10::Allocator* raw_;
};

std::atomic<bool> g_installed{false};

}  // namespace

void install_pooled_cpu_allocator() {
  static std::once_flag once;
  std::call_once(once, [] {
    static auto* a = new PooledCpuAllocator(c10::GetDefaultCPUAllocator());
    BlockPool::cpu();
    c10::SetCPUAllocator(a, /*priority=*/100);  // above LibTorch's own registration
    g_installed = true;
  });
}

bool pooled_cpu_allocator_installed() { return g_installed; }

}  // namespace mtrain::trainer

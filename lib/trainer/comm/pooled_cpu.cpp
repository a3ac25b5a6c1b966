// LibTorch's side of the block pool (protocol in block_pool.hpp).
#include "lib/trainer/comm/pooled_cpu.hpp"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace mtrain::trainer {

BlockPool& cpu_block_pool() {
  // LibTorch's own allocator, even once install_pooled_cpu_allocator() replaced the current one.
  static BlockPool* p = new BlockPool(BlockPool::Source{
      [](size_t n) { return c10::GetDefaultCPUAllocator()->raw_allocate(n); },
      [](void* q) { c10::GetDefaultCPUAllocator()->raw_deallocate(q); }});
  return *p;
}

at::DataPtr pooled_data(BlockPool& pool, size_t nbytes) {
  const BlockPool::Lease l = pool.allocate(nbytes);
  return at::DataPtr(l.data, l.ctx, &BlockPool::give_back, at::Device(at::kCPU));
}

at::Tensor pooled_empty(int64_t numel, const at::TensorOptions& opts) {
  at::Tensor t = at::empty({0}, opts);
  const size_t nbytes = static_cast<size_t>(numel) * t.element_size();
  if (!t.device().is_cpu() || nbytes < kPooledMinBytes) return at::empty({numel}, opts);
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(pooled_data(cpu_block_pool(), nbytes));
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
    at::DataPtr block = pooled_data(cpu_block_pool(), nbytes);
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
    cpu_block_pool();
    c10::SetCPUAllocator(a, /*priority=*/100);  // above LibTorch's own registration
    g_installed = true;
  });
}

bool pooled_cpu_allocator_installed() { return g_installed; }

}  // namespace mtrain::trainer

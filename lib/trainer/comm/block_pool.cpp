// Protocol in block_pool.hpp.
#include "mtrain/trainer/comm/block_pool.hpp"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <vector>

namespace mtrain::trainer {

BlockPool::~BlockPool() = default;

BlockPool& BlockPool::cpu() {
  static BlockPool* p = new BlockPool(c10::GetCPUAllocator());
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
    auto it = idle_.find(nbytes);
    if (it != idle_.end()) {
      h = std::move(it->second);
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

}  // namespace mtrain::trainer

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

BlockPool::~BlockPool() {
  // Every block was given back, so each segment is one free block: only their records are left.
  for (Block* b : free_) delete b;
}

BlockPool& BlockPool::cpu() {
  // LibTorch's own allocator, even once install_pooled_cpu_allocator() replaced the current one.
  static BlockPool* p = new BlockPool(c10::GetDefaultCPUAllocator());
  return *p;
}

void BlockPool::give_back(void* ctx) {
  auto* b = static_cast<Block*>(ctx);
  b->seg->pool->put_back(b);
}

void BlockPool::merge_into(Block* left, Block* right) {
  free_.erase(left);
  free_.erase(right);
  left->size += right->size;
  left->next = right->next;
  if (right->next) right->next->prev = left;
  delete right;
}

void BlockPool::put_back(Block* b) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.in_use -= b->size;
  b->free = true;
  // Merge with free neighbours: the segment's free memory stays in as few blocks as it can.
  if (Block* p = b->prev; p && p->free) {
    merge_into(p, b);
    b = p;
  }
  if (Block* n = b->next; n && n->free) merge_into(b, n);
  free_.insert(b);
}

BlockPool::Block* BlockPool::take(Block* b, size_t nbytes) {
  free_.erase(b);
  if (b->size - nbytes >= kMinSplit) {
    auto* rest = new Block{b->seg, b->ptr + nbytes, b->size - nbytes, true, b, b->next};
    if (b->next) b->next->prev = rest;
    b->next = rest;
    b->size = nbytes;
    free_.insert(rest);
  }
  b->free = false;
  stats_.in_use += b->size;
  stats_.high_water = std::max(stats_.high_water, stats_.in_use);
  return b;
}

template <class More>
std::vector<std::unique_ptr<BlockPool::Segment>> BlockPool::release_free_segments(More more) {
  // A wholly free segment is one free block with no neighbours; the largest come last in free_.
  std::vector<std::unique_ptr<Segment>> gone;
  auto it = free_.end();
  while (it != free_.begin() && more()) {
    const auto cur = std::prev(it);
    Block* b = *cur;
    if (b->prev || b->next) {  // part of its segment is in use
      it = cur;
      continue;
    }
    free_.erase(cur);  // `it` stays valid
    auto s = std::find_if(segments_.begin(), segments_.end(), [&](const auto& p) { return p.get() == b->seg; });
    held_ -= b->size;
    gone.push_back(std::move(*s));
    segments_.erase(s);
    delete b;
  }
  return gone;
}

at::DataPtr BlockPool::allocate(size_t nbytes) {
  nbytes = std::max<size_t>(kBlockRound, (nbytes + kBlockRound - 1) / kBlockRound * kBlockRound);
  std::vector<std::unique_ptr<Segment>> released;  // freed outside the lock
  Block* b = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Best fit among all free memory the pool holds: resident pages, whatever size they were
    // freed with.
    Block probe{nullptr, nullptr, nbytes, true, nullptr, nullptr};
    auto it = free_.lower_bound(&probe);
    if (it != free_.end()) {
      b = take(*it, nbytes);
    } else {
      // A fresh segment of exactly the request. Keep held under the high-water mark it raises:
      // give wholly free segments back first, largest first.
      const size_t mark = std::max(stats_.high_water, stats_.in_use + nbytes);
      released = release_free_segments([&] { return held_ + nbytes > mark; });
      ++stats_.fresh;
    }
  }
  released.clear();
  if (!b) {
    auto seg = std::make_unique<Segment>(Segment{this, raw_->allocate(nbytes), nbytes});
    std::lock_guard<std::mutex> lock(mu_);
    auto* whole = new Block{seg.get(), static_cast<char*>(seg->raw.get()), nbytes, true, nullptr, nullptr};
    free_.insert(whole);
    held_ += nbytes;
    segments_.push_back(std::move(seg));
    b = take(whole, nbytes);
  }
  return at::DataPtr(b->ptr, b, &BlockPool::give_back, b->seg->raw.device());
}

BlockPool::Stats BlockPool::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s = stats_;
  s.idle = held_ - stats_.in_use;
  s.segments = segments_.size();
  return s;
}

void BlockPool::trim_to(size_t idle_bytes) {
  std::vector<std::unique_ptr<Segment>> gone;  // freed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  gone = release_free_segments([&] { return held_ - stats_.in_use > idle_bytes; });
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

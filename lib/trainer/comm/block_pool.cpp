// Protocol in block_pool.hpp.
#include "lib/trainer/comm/block_pool.hpp"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <vector>

namespace mtrain::trainer {

BlockPool::~BlockPool() {
  // Every block was given back, so each segment is one free block: only their records are left.
  for (Block* b : free_) delete b;
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

BlockPool::Lease BlockPool::allocate(size_t nbytes) {
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
    void* base = raw_.take(nbytes);
    auto seg = std::make_unique<Segment>(this, base, nbytes);
    std::lock_guard<std::mutex> lock(mu_);
    auto* whole = new Block{seg.get(), static_cast<char*>(base), nbytes, true, nullptr, nullptr};
    free_.insert(whole);
    held_ += nbytes;
    segments_.push_back(std::move(seg));
    b = take(whole, nbytes);
  }
  return Lease{b->ptr, b};
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

BlockPool::Source heap_segments() {
  return BlockPool::Source{[](size_t n) {
                             // aligned_alloc wants a multiple of the alignment; pool sizes are pages.
                             void* p = std::aligned_alloc(64, (n + 63) / 64 * 64);
                             if (!p) throw std::bad_alloc();
                             return p;
                           },
                           [](void* p) { std::free(p); }};
}

}  // namespace mtrain::trainer

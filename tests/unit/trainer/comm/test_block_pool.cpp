#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "mtrain/trainer/comm/block_pool.hpp"

using namespace mtrain::trainer;

namespace {
constexpr size_t MiB = size_t{1} << 20;

// Maps one segment of `n` bytes into the pool and gives it back whole: the pool then holds one
// free block of n bytes. Returns its start.
char* free_segment(BlockPool& pool, size_t n) {
  at::DataPtr p = pool.allocate(n);
  return static_cast<char*>(p.get());
}
}  // namespace

TEST_CASE("block pool hands a released block back to the next allocation of its size",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  void* first = nullptr;
  {
    at::DataPtr a = pool.allocate(2 * MiB);
    first = a.get();
    CHECK(pool.stats().in_use == 2 * MiB);
  }
  CHECK(pool.stats().in_use == 0);
  CHECK(pool.stats().idle == 2 * MiB);
  at::DataPtr b = pool.allocate(2 * MiB);
  CHECK(b.get() == first);
  CHECK(pool.stats().fresh == 1);
  CHECK(pool.stats().idle == 0);
}

TEST_CASE("block pool splits a larger free block rather than mapping a new one",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  char* const big = free_segment(pool, 3 * MiB);
  at::DataPtr a = pool.allocate(2 * MiB);  // the front of the free 3 MiB, the rest stays free
  CHECK(a.get() == big);
  CHECK(pool.stats().in_use == 2 * MiB);
  CHECK(pool.stats().idle == 1 * MiB);
  at::DataPtr c = pool.allocate(1 * MiB);  // the rest
  CHECK(c.get() == big + 2 * MiB);
  CHECK(pool.stats().fresh == 1);
  CHECK(pool.stats().idle == 0);
  SECTION("a rest smaller than kMinSplit stays with the block") {
    a = at::DataPtr();
    at::DataPtr d = pool.allocate(2 * MiB - 64 * 1024);
    CHECK(d.get() == big);
    CHECK(pool.stats().in_use == 3 * MiB);
  }
}

TEST_CASE("block pool merges blocks given back next to each other into one",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  char* const base = free_segment(pool, 6 * MiB);
  {
    at::DataPtr a = pool.allocate(2 * MiB), b = pool.allocate(2 * MiB), c = pool.allocate(2 * MiB);
    CHECK(pool.stats().fresh == 1);
    std::set<char*> starts{static_cast<char*>(a.get()), static_cast<char*>(b.get()), static_cast<char*>(c.get())};
    CHECK(starts == std::set<char*>{base, base + 2 * MiB, base + 4 * MiB});
    b = at::DataPtr();  // the middle first: two free neighbours join it afterwards
    a = at::DataPtr();
  }
  at::DataPtr again = pool.allocate(6 * MiB);
  CHECK(again.get() == base);
  CHECK(pool.stats().fresh == 1);
  CHECK(pool.stats().segments == 1);
}

TEST_CASE("block pool reaches a steady state: a repeated step of mixed sizes maps nothing new",
          "[trainer][comm][block_pool]") {
  // One "step" of a sharded strategy: units gathered one after another (sizes that differ by more
  // than 2x), two reduction buffers alive at once, a gradient of yet another size.
  BlockPool pool(c10::GetDefaultCPUAllocator());
  auto step = [&] {
    for (size_t unit : {8, 3, 13, 2}) {
      at::DataPtr gathered = pool.allocate(unit * MiB);
      std::memset(gathered.get(), 1, unit * MiB);
    }
    at::DataPtr grad = pool.allocate(5 * MiB);
    at::DataPtr r1 = pool.allocate(3 * MiB), r2 = pool.allocate(3 * MiB);
  };
  step();
  const BlockPool::Stats first = pool.stats();
  for (int i = 0; i < 5; ++i) step();
  const BlockPool::Stats later = pool.stats();
  CHECK(later.fresh == first.fresh);
  CHECK(later.in_use == 0);
  CHECK(later.in_use + later.idle <= later.high_water);
  pool.trim();
  CHECK(pool.stats().idle == 0);
  CHECK(pool.stats().segments == 0);
}

TEST_CASE("block pool: random allocations never overlap and keep their contents",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  std::mt19937 rng(20261126);
  struct Live {
    at::DataPtr p;
    size_t n;
    unsigned char tag;
  };
  std::vector<Live> live;
  size_t live_bytes = 0;
  auto round_up = [](size_t n) { return (n + BlockPool::kBlockRound - 1) / BlockPool::kBlockRound * BlockPool::kBlockRound; };
  for (int i = 0; i < 2000; ++i) {
    if (live.empty() || rng() % 3 != 0) {
      const size_t n = MiB + rng() % (6 * MiB);
      Live l{pool.allocate(n), n, static_cast<unsigned char>(i)};
      REQUIRE(reinterpret_cast<uintptr_t>(l.p.get()) % 64 == 0);
      std::memset(l.p.get(), l.tag, n);
      live_bytes += round_up(n);
      live.push_back(std::move(l));
    } else {
      const size_t k = rng() % live.size();
      const auto* c = static_cast<const unsigned char*>(live[k].p.get());
      // A block that overlapped another would have been overwritten with that one's tag.
      REQUIRE(c[0] == live[k].tag);
      REQUIRE(c[live[k].n / 2] == live[k].tag);
      REQUIRE(c[live[k].n - 1] == live[k].tag);
      live_bytes -= round_up(live[k].n);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
    }
    CHECK(pool.stats().in_use >= live_bytes);
    if (live.size() > 40) {
      live_bytes = 0;
      live.clear();
    }
  }
  live.clear();
  CHECK(pool.stats().in_use == 0);
  pool.trim();
  CHECK(pool.stats().segments == 0);
}

TEST_CASE("block pool keeps as many blocks of a size as were in use at once",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  for (int round = 0; round < 3; ++round) {
    std::vector<at::DataPtr> held;
    for (int i = 0; i < 3; ++i) held.push_back(pool.allocate(2 * MiB));
  }
  CHECK(pool.stats().fresh == 3);
  CHECK(pool.stats().idle == 6 * MiB);
  CHECK(pool.stats().high_water == 6 * MiB);
}

TEST_CASE("block pool never holds more than the most memory in use at once",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  {
    at::DataPtr a = pool.allocate(2 * MiB), b = pool.allocate(2 * MiB);
  }
  REQUIRE(pool.stats().idle == 4 * MiB);
  // A size the pool has no block of: idle blocks are freed until the new one fits under 4 MiB.
  at::DataPtr c = pool.allocate(3 * MiB);
  auto s = pool.stats();
  CHECK(s.in_use == 3 * MiB);
  CHECK(s.in_use + s.idle <= 4 * MiB);
  at::DataPtr d = pool.allocate(1 * MiB);  // fits beside c under the mark: nothing freed
  s = pool.stats();
  CHECK(s.in_use + s.idle <= 4 * MiB);
  CHECK(s.high_water == 4 * MiB);
  // Sizes alternating between steps (units of different sizes) stay under the mark too.
  c = at::DataPtr();
  d = at::DataPtr();
  for (int step = 0; step < 4; ++step) {
    { at::DataPtr e = pool.allocate(static_cast<size_t>(step + 1) * MiB); }
    s = pool.stats();
    CHECK(s.in_use + s.idle <= s.high_water);
  }
  pool.trim();
  CHECK(pool.stats().idle == 0);
}

TEST_CASE("block pool trims wholly free segments, largest first, and keeps partly used ones",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  at::DataPtr kept;
  {
    at::DataPtr a = pool.allocate(2 * MiB), b = pool.allocate(2 * MiB), c = pool.allocate(4 * MiB);
    at::DataPtr d = pool.allocate(4 * MiB);
    d = at::DataPtr();
    kept = pool.allocate(1 * MiB);  // the front of d's free segment: d's segment is partly used now
  }
  REQUIRE(pool.stats().segments == 4);
  REQUIRE(pool.stats().idle == 11 * MiB);
  pool.trim_to(5 * MiB);  // the free 4 MiB segment, then one 2 MiB segment
  CHECK(pool.stats().idle == 5 * MiB);
  CHECK(pool.stats().segments == 2);
  pool.trim();  // the other 2 MiB segment; 3 MiB stay idle beside `kept`
  CHECK(pool.stats().idle == 3 * MiB);
  CHECK(pool.stats().segments == 1);
  at::DataPtr again = pool.allocate(3 * MiB);
  CHECK(static_cast<char*>(again.get()) == static_cast<char*>(kept.get()) + MiB);
  CHECK(pool.stats().fresh == 4);
}

TEST_CASE("pooled_empty takes large CPU buffers from the process pool and gives them back",
          "[trainer][comm][block_pool]") {
  const auto before = BlockPool::cpu().stats();
  {
    at::Tensor small = pooled_empty(16, at::kFloat);
    CHECK(small.numel() == 16);
    CHECK(BlockPool::cpu().stats().in_use == before.in_use);
    at::Tensor big = pooled_empty(static_cast<int64_t>(MiB), at::kFloat);  // 4 MiB
    CHECK(big.numel() == static_cast<int64_t>(MiB));
    CHECK(big.is_contiguous());
    big.fill_(2.0f);
    CHECK(big.sum().item<double>() == 2.0 * static_cast<double>(MiB));
    CHECK(BlockPool::cpu().stats().in_use == before.in_use + 4 * MiB);
  }
  CHECK(BlockPool::cpu().stats().in_use == before.in_use);
}

TEST_CASE("the pooled CPU allocator serves every large CPU tensor from the process pool",
          "[trainer][comm][block_pool]") {
  install_pooled_cpu_allocator();
  install_pooled_cpu_allocator();  // idempotent
  REQUIRE(pooled_cpu_allocator_installed());
  const auto before = BlockPool::cpu().stats();
  size_t fresh = 0;
  {
    at::Tensor g = at::empty({static_cast<int64_t>(MiB)}, at::kFloat);  // 4 MiB through LibTorch's allocator
    fresh = BlockPool::cpu().stats().fresh;
    CHECK(BlockPool::cpu().stats().in_use == before.in_use + 4 * MiB);
    g.fill_(1.0f);
    CHECK(g.sum().item<double>() == static_cast<double>(MiB));
  }
  CHECK(BlockPool::cpu().stats().in_use == before.in_use);
  {
    at::Tensor again = at::empty({static_cast<int64_t>(MiB)}, at::kFloat);
    CHECK(BlockPool::cpu().stats().fresh == fresh);  // a kept block again, not a fresh mapping
    at::Tensor small = at::empty({16}, at::kFloat);
    CHECK(BlockPool::cpu().stats().in_use == before.in_use + 4 * MiB);  // small ones are LibTorch's
  }
  SECTION("autograd's gradients come from the pool and go back to it") {
    at::Tensor w = at::ones({1024, 1024}, at::kFloat).set_requires_grad(true);  // 4 MiB
    (w * 2).sum().backward();
    REQUIRE(w.grad().defined());
    CHECK(w.grad()[3][5].item<float>() == 2.0f);
    CHECK(BlockPool::cpu().stats().in_use == before.in_use + 8 * MiB);  // w and its gradient
    w.mutable_grad() = at::Tensor();
    CHECK(BlockPool::cpu().stats().in_use == before.in_use + 4 * MiB);
  }
  SECTION("raw_allocate / raw_deallocate (oneDNN's way) work for large and small blocks") {
    c10::Allocator* a = c10::GetCPUAllocator();
    void* big = a->raw_allocate(2 * MiB);
    CHECK(BlockPool::cpu().stats().in_use >= before.in_use + 2 * MiB);  // an idle 4 MiB block may serve it
    static_cast<char*>(big)[2 * MiB - 1] = 7;
    a->raw_deallocate(big);
    CHECK(BlockPool::cpu().stats().in_use == before.in_use);
    void* small = a->raw_allocate(64);
    static_cast<char*>(small)[63] = 1;
    a->raw_deallocate(small);
    CHECK(BlockPool::cpu().stats().in_use == before.in_use);
  }
}

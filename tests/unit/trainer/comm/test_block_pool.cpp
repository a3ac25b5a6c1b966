#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <vector>

#include "mtrain/trainer/comm/block_pool.hpp"

using namespace mtrain::trainer;

namespace {
constexpr size_t MiB = size_t{1} << 20;
}

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

TEST_CASE("block pool hands an idle block up to twice the size rather than mapping a new one",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  void* big = nullptr;
  {
    at::DataPtr b = pool.allocate(3 * MiB);
    big = b.get();
  }
  {
    at::DataPtr a = pool.allocate(2 * MiB);  // 3 MiB <= 2 x 2 MiB: the idle block
    CHECK(a.get() == big);
    CHECK(pool.stats().in_use == 3 * MiB);
    CHECK(pool.stats().fresh == 1);
  }
  at::DataPtr c = pool.allocate(1 * MiB);  // 3 MiB > 2 x 1 MiB: a fresh block
  CHECK(c.get() != big);
  CHECK(pool.stats().fresh == 2);
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

TEST_CASE("block pool trims idle blocks down to what the next phase used",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetDefaultCPUAllocator());
  pool.begin_window();
  { at::DataPtr a = pool.allocate(2 * MiB); }  // a "forward" using one 2 MiB block at a time
  const size_t forward = pool.stats().window_high_water;
  CHECK(forward == 2 * MiB);
  {
    at::DataPtr a = pool.allocate(2 * MiB), b = pool.allocate(2 * MiB), c = pool.allocate(4 * MiB);
    CHECK(pool.stats().window_high_water == 8 * MiB);
  }
  REQUIRE(pool.stats().idle == 8 * MiB);
  pool.trim_to(forward);  // largest first: the 4 MiB block and one 2 MiB block go
  CHECK(pool.stats().idle == 2 * MiB);
  at::DataPtr again = pool.allocate(2 * MiB);
  CHECK(pool.stats().fresh == 3);  // the next "forward" reuses the kept block
  pool.begin_window();
  CHECK(pool.stats().window_high_water == 2 * MiB);
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

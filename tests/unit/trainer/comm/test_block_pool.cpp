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
  BlockPool pool(c10::GetCPUAllocator());
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

TEST_CASE("block pool keeps as many blocks of a size as were in use at once",
          "[trainer][comm][block_pool]") {
  BlockPool pool(c10::GetCPUAllocator());
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
  BlockPool pool(c10::GetCPUAllocator());
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
  BlockPool pool(c10::GetCPUAllocator());
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

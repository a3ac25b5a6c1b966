#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>

#include <cstddef>

#include "lib/trainer/comm/pooled_cpu.hpp"

using namespace mtrain::trainer;

namespace {
constexpr size_t MiB = size_t{1} << 20;
}  // namespace

TEST_CASE("pooled_empty takes large CPU buffers from the process pool and gives them back",
          "[trainer][comm][pooled_cpu]") {
  const auto before = cpu_block_pool().stats();
  {
    at::Tensor small = pooled_empty(16, at::kFloat);
    CHECK(small.numel() == 16);
    CHECK(cpu_block_pool().stats().in_use == before.in_use);
    at::Tensor big = pooled_empty(static_cast<int64_t>(MiB), at::kFloat);  // 4 MiB
    CHECK(big.numel() == static_cast<int64_t>(MiB));
    CHECK(big.is_contiguous());
    big.fill_(2.0f);
    CHECK(big.sum().item<double>() == 2.0 * static_cast<double>(MiB));
    CHECK(cpu_block_pool().stats().in_use == before.in_use + 4 * MiB);
  }
  CHECK(cpu_block_pool().stats().in_use == before.in_use);
}

TEST_CASE("the pooled CPU allocator serves every large CPU tensor from the process pool",
          "[trainer][comm][pooled_cpu]") {
  install_pooled_cpu_allocator();
  install_pooled_cpu_allocator();  // idempotent
  REQUIRE(pooled_cpu_allocator_installed());
  const auto before = cpu_block_pool().stats();
  size_t fresh = 0;
  {
    at::Tensor g = at::empty({static_cast<int64_t>(MiB)}, at::kFloat);  // 4 MiB through LibTorch's allocator
    fresh = cpu_block_pool().stats().fresh;
    CHECK(cpu_block_pool().stats().in_use == before.in_use + 4 * MiB);
    g.fill_(1.0f);
    CHECK(g.sum().item<double>() == static_cast<double>(MiB));
  }
  CHECK(cpu_block_pool().stats().in_use == before.in_use);
  {
    at::Tensor again = at::empty({static_cast<int64_t>(MiB)}, at::kFloat);
    CHECK(cpu_block_pool().stats().fresh == fresh);  // a kept block again, not a fresh mapping
    at::Tensor small = at::empty({16}, at::kFloat);
    CHECK(cpu_block_pool().stats().in_use == before.in_use + 4 * MiB);  // small ones are LibTorch's
  }
  SECTION("autograd's gradients come from the pool and go back to it") {
    at::Tensor w = at::ones({1024, 1024}, at::kFloat).set_requires_grad(true);  // 4 MiB
    (w * 2).sum().backward();
    REQUIRE(w.grad().defined());
    CHECK(w.grad()[3][5].item<float>() == 2.0f);
    CHECK(cpu_block_pool().stats().in_use == before.in_use + 8 * MiB);  // w and its gradient
    w.mutable_grad() = at::Tensor();
    CHECK(cpu_block_pool().stats().in_use == before.in_use + 4 * MiB);
  }
  SECTION("raw_allocate / raw_deallocate (oneDNN's way) work for large and small blocks") {
    c10::Allocator* a = c10::GetCPUAllocator();
    void* big = a->raw_allocate(2 * MiB);
    CHECK(cpu_block_pool().stats().in_use >= before.in_use + 2 * MiB);  // an idle 4 MiB block may serve it
    static_cast<char*>(big)[2 * MiB - 1] = 7;
    a->raw_deallocate(big);
    CHECK(cpu_block_pool().stats().in_use == before.in_use);
    void* small = a->raw_allocate(64);
    static_cast<char*>(small)[63] = 1;
    a->raw_deallocate(small);
    CHECK(cpu_block_pool().stats().in_use == before.in_use);
  }
}

TEST_CASE("pooled_data hands a block of the pool to a DataPtr, which gives it back", "[trainer][comm][pooled_cpu]") {
  BlockPool pool(heap_segments());
  {
    at::DataPtr p = pooled_data(pool, 2 * MiB);
    CHECK(p.device().is_cpu());
    CHECK(pool.stats().in_use == 2 * MiB);
  }
  CHECK(pool.stats().in_use == 0);
  CHECK(pool.stats().idle == 2 * MiB);
}

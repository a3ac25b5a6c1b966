#pragma once
// LibTorch's CPU tensors on the block pool (comm/block_pool.hpp; docs/architecture.md §6): the
// process-wide pool, its blocks as DataPtrs, and the CPU allocator that routes large tensors to it.
#include <ATen/core/Tensor.h>
#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>

#include "lib/trainer/comm/block_pool.hpp"

namespace mtrain::trainer {

// The process-wide pool of CPU blocks, its segments from LibTorch's own CPU allocator; never
// destroyed (storages may be freed at exit).
BlockPool& cpu_block_pool();

// A block of `pool` of at least `nbytes`, owned by the DataPtr (it goes back when destroyed).
at::DataPtr pooled_data(BlockPool& pool, size_t nbytes);

// A 1-D CPU tensor of `numel` elements whose memory comes from cpu_block_pool() when it is large
// (>= kPooledMinBytes; smaller ones and other devices: at::empty). Contents undefined.
constexpr size_t kPooledMinBytes = size_t{1} << 20;
at::Tensor pooled_empty(int64_t numel, const at::TensorOptions& opts);

// Makes cpu_block_pool() the memory of every CPU tensor of at least kPooledMinBytes (train.
// cpu_memory_pool): autograd's gradients, activations, optimiser temporaries, not only the sharded
// engine's own buffers. Why: a step allocates and frees the same sizes every time (the sharded
// strategies' per-parameter .grad, which is flattened and dropped, above all), and glibc serves
// blocks this large with fresh mappings, so each one was faulted in and zeroed again every step.
// Process-wide and idempotent; smaller allocations go to LibTorch's own CPU allocator.
void install_pooled_cpu_allocator();
// Whether install_pooled_cpu_allocator() ran in this process.
bool pooled_cpu_allocator_installed();

}  // namespace mtrain::trainer

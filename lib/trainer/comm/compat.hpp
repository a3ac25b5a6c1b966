#pragma once
// Every API difference between LibTorch 1.13 (Debian, CPU) and 2.x (CUDA builds) lives here:
// the type a backend is created as (1.13: ProcessGroupGloo is a c10d::ProcessGroup; 2.x: it is a
// c10d::Backend behind a ProcessGroup), how an autograd post hook is attached, and where the
// NCCL backend comes from. Nothing outside lib/trainer/comm names these c10d types directly.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif

// c10::Allocator::allocate is const in 1.13 and not in 2.x; an allocator written for both
// declares `c10::DataPtr allocate(size_t n) MTRAIN_ALLOCATE_CONST override`.
#if TORCH_VERSION_MAJOR >= 2
#define MTRAIN_ALLOCATE_CONST
#else
#define MTRAIN_ALLOCATE_CONST const
#endif

namespace mtrain::trainer::compat {

#if TORCH_VERSION_MAJOR >= 2
using BackendImpl = c10d::Backend;
#else
using BackendImpl = c10d::ProcessGroup;
#endif
using BackendPtr = c10::intrusive_ptr<BackendImpl>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;
using StorePtr = c10::intrusive_ptr<c10d::Store>;

// Gloo over TCP on the loopback or the host's address (MASTER_ADDR decides which interface), or
// on the named interfaces (one device each) when `interfaces` is not empty.
BackendPtr make_gloo(const StorePtr& store, int rank, int world, std::chrono::milliseconds timeout,
                     const std::string& hostname, const std::vector<std::string>& interfaces = {});
// NCCL on the current CUDA device; throws mtrain::Error in builds without MTRAIN_WITH_CUDA.
BackendPtr make_nccl(const StorePtr& store, int rank, int world, std::chrono::milliseconds timeout);
bool nccl_available();

// True when the backend implements a native reduce-scatter / all-gather into one flat tensor
// (NCCL); Gloo in 1.13 has neither, so the communicator emulates them.
bool has_flat_collectives(const BackendPtr& backend);

// Runs `fn` after autograd has accumulated the gradient of `param` (a post hook on its
// AccumulateGrad node). Returns the node, which the caller must keep alive for the hook to fire.
std::shared_ptr<void> after_grad_accumulated(const at::Tensor& param, std::function<void()> fn);

// Storage of a flat parameter buffer that is freed between uses (ZeRO-3 / FSDP): the storage
// object and every view of it stay alive (autograd keeps views of parameters), only the memory
// behind it is dropped and later re-allocated with the same size. Views must be created while
// the memory is there (ATen checks storage bounds when a view is made).
void release_storage(const at::Tensor& t);
void reallocate_storage(const at::Tensor& t, size_t nbytes);

// Calls `fn(ctx, storage)` for the storage of every tensor input of every ATen operator started
// on this thread (and on the autograd threads its backward runs on) — before the operator's
// kernel runs — until the returned handle is destroyed (on the same thread). A RecordFunction
// start callback: LibTorch's C++ modules have no forward pre-hooks, this is the one place every
// use of a parameter passes through.
// The visitor gets all of one operator's input storages at once: an operator that reads
// parameters of two units (a tied bias beside another unit's weight) needs both gathered together.
// What it returns (nullptr: nothing) is handed to `end` when that operator returns — after every
// operator it called inside (a composite such as aten::linear runs aten::t and aten::addmm), so a
// watcher can keep what an outer operator reads in place while its inner operators run.
using StorageVisitor = void* (*)(const void* const* storages, size_t n);
using OpEndVisitor = void (*)(void* token);
std::shared_ptr<void> watch_op_inputs(StorageVisitor fn, OpEndVisitor end);

// Autocast to `dtype` on `device` while the handle lives (nullptr: not supported there, e.g.
// fp16 on CPU in 1.13).
std::shared_ptr<void> autocast_scope(const at::Device& device, at::ScalarType dtype);

// Makes `index` the current CUDA device (before NCCL is created); no-op in CPU builds.
void select_cuda_device(int index);
// The CUDA runtime version the worker was compiled against ("13.0"); "" in CPU builds.
std::string cuda_compiled_version();
// CUDA devices this process can see (CUDA_VISIBLE_DEVICES applied); 0 in CPU builds.
int cuda_device_count();
// The NCCL version compiled in ("2.27.3"); "" in CPU builds.
std::string nccl_version();
// Waits for every kernel queued on `device`; no-op for CPU devices and in CPU builds.
void device_synchronize(const at::Device& device);

// Peak bytes the CUDA caching allocator has held on `device` (0 for CPU devices or CPU builds).
int64_t device_peak_bytes(const at::Device& device);

// AOTInductor-compiled programs (model.name compiled: the .pt2 files of a package) run on the
// LibTorch 2.x line only; 1.13 has no loader, and its worker refuses the format.
bool compiled_programs_supported();
// Loads the .pt2 program at `path` — it holds a compiled shared library, so loading runs native
// code: the caller has model.trust_code's word — and returns its call, inputs to outputs. The
// loader checks neither shapes nor strides of what it is given (the caller does). Throws
// mtrain::Error where compiled_programs_supported() is false; LibTorch's own errors pass through.
using CompiledCall = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;
CompiledCall load_compiled_program(const std::string& path);

// Stores.
StorePtr make_tcp_store(const std::string& host, int port, bool is_server, int world,
                        std::chrono::milliseconds timeout);
StorePtr make_hash_store();
StorePtr make_prefix_store(const std::string& prefix, const StorePtr& store);

}  // namespace mtrain::trainer::compat

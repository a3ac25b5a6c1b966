// LibTorch 1.13 / 2.x bridging (see compat.hpp). Guarded by TORCH_VERSION_MAJOR and
// MTRAIN_WITH_CUDA only; keep every #if of that kind in this folder.
#include "lib/trainer/comm/compat.hpp"

#include <ATen/autocast_mode.h>
#include <ATen/record_function.h>
#include <c10/core/StorageImpl.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif
#ifdef MTRAIN_WITH_CUDA
#include <cuda_runtime_api.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <atomic>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/comm/pooled_cpu.hpp"

namespace mtrain::trainer::compat {

BackendPtr make_gloo(const StorePtr& store, int rank, int world, std::chrono::milliseconds timeout,
                     const std::string& hostname, const std::vector<std::string>& interfaces) {
  auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
  for (const auto& iface : interfaces) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(iface));
  if (opts->devices.empty())
    opts->devices.push_back(hostname.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                             : c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
  // Two Gloo threads: enough to keep one bucket on the wire while the next is queued.
  opts->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, opts);
}

bool nccl_available() {
#ifdef MTRAIN_WITH_CUDA
  return true;
#else
  return false;
#endif
}

BackendPtr make_nccl(const StorePtr& store, int rank, int world, std::chrono::milliseconds timeout) {
#ifdef MTRAIN_WITH_CUDA
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world, opts);
#else
  (void)store, (void)rank, (void)world, (void)timeout;
  throw UsageError("this mtrain-worker was built without CUDA, so the NCCL backend is unavailable",
                   "rebuild with -DMTRAIN_WITH_CUDA=ON against a CUDA LibTorch, or train on CPU (gloo)");
#endif
}

std::string cuda_compiled_version() {
#ifdef MTRAIN_WITH_CUDA
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
#else
  return "";
#endif
}

int cuda_device_count() {
#ifdef MTRAIN_WITH_CUDA
  // Asked only when a driver answers: without one, device_count() warns on stderr.
  if (!at::detail::getCUDAHooks().hasCUDA()) return 0;
  return static_cast<int>(c10::cuda::device_count());
#else
  return 0;
#endif
}

std::string nccl_version() {
#ifdef MTRAIN_WITH_CUDA
  return c10d::getNcclVersion();
#else
  return "";
#endif
}

void device_synchronize(const at::Device& device) {
#ifdef MTRAIN_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#else
  (void)device;
#endif
}

void select_cuda_device(int index) {
#ifdef MTRAIN_WITH_CUDA
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
#else
  (void)index;
#endif
}

int64_t device_peak_bytes(const at::Device& device) {
#ifdef MTRAIN_WITH_CUDA
  if (device.is_cuda()) {
    // Index 0 is StatType::AGGREGATE in every version (the enum moved namespaces in 2.5).
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    return stats.allocated_bytes[0].peak;
  }
#endif
  (void)device;
  return 0;
}

bool has_flat_collectives(const BackendPtr& backend) {
  return backend->getBackendName() == "nccl";
}

std::shared_ptr<void> after_grad_accumulated(const at::Tensor& param, std::function<void()> fn) {
  auto node = torch::autograd::impl::grad_accumulator(param);
  if (!node) {
    throw RuntimeFailure("a parameter that requires no gradient was given to a gradient hook");
  }
  node->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
      [fn = std::move(fn)](const torch::autograd::variable_list& outputs,
                           const torch::autograd::variable_list&) {
        fn();
        return outputs;
      }));
  // 1.13 hands the node out as a std::shared_ptr, 2.x as a c10::intrusive_ptr: either is kept
  // alive by the holder this returns.
  return std::make_shared<decltype(node)>(std::move(node));
}

// Gathered-parameter buffers are released and re-allocated several times a step (ZeRO-3/FSDP),
// always with the sizes of the same units: their large CPU blocks come from cpu_block_pool()
// (pooled_cpu.hpp), so a unit costs its pages once, shared with the engine's other pooled buffers.
void release_storage(const at::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  // A pooled block goes back to the pool as its DataPtr is destroyed here.
  s->set_data_ptr_noswap(at::DataPtr(nullptr, t.device()));
  s->set_nbytes(static_cast<size_t>(0));
}

void reallocate_storage(const at::Tensor& t, size_t nbytes) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  if (s->nbytes() == nbytes && s->data() != nullptr) return;
  at::DataPtr block = t.device().is_cpu() && nbytes >= kPooledMinBytes ? pooled_data(cpu_block_pool(), nbytes)
                                                                      : s->allocator()->allocate(nbytes);
  s->set_data_ptr_noswap(std::move(block));
  s->set_nbytes(nbytes);
}

namespace {
// One visitor per thread that asked (the RecordFunction start callback is a plain function
// pointer, so the visitor travels in a thread-local; autograd threads inherit the callback but
// not this variable, hence the process-wide fallback below).
std::atomic<StorageVisitor> g_visitor{nullptr};
std::atomic<OpEndVisitor> g_end{nullptr};

void collect(c10::SmallVector<const void*, 8>& out, const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.has_storage()) out.push_back(t.storage().unsafeGetStorageImpl());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorVector())
      if (t.defined() && t.has_storage()) out.push_back(t.storage().unsafeGetStorageImpl());
  }
}

struct OpToken : at::ObserverContext {
  explicit OpToken(void* t) : token(t) {}
  void* token;
};

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& rf) {
  StorageVisitor fn = g_visitor.load();
  if (fn == nullptr) return nullptr;
  c10::SmallVector<const void*, 8> storages;
  for (const c10::IValue& v : rf.inputs()) collect(storages, v);
  if (storages.empty()) return nullptr;
  void* token = fn(storages.data(), storages.size());
  return token == nullptr ? nullptr : std::make_unique<OpToken>(token);
}

void on_op_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  OpEndVisitor end = g_end.load();
  if (ctx != nullptr && end != nullptr) end(static_cast<OpToken*>(ctx)->token);
}
}  // namespace

std::shared_ptr<void> watch_op_inputs(StorageVisitor fn, OpEndVisitor end) {
  g_visitor.store(fn);  // every engine registers the same dispatcher functions
  g_end.store(end);
  auto handle = at::addThreadLocalCallback(at::RecordFunctionCallback(&on_op_start, &on_op_end).needsInputs(true));
  return std::shared_ptr<void>(new at::CallbackHandle(handle), [](void* p) {
    auto* h = static_cast<at::CallbackHandle*>(p);
    at::removeCallback(*h);
    delete h;
  });
}

std::shared_ptr<void> autocast_scope(const at::Device& device, at::ScalarType dtype) {
  namespace ac = at::autocast;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const at::DeviceType dt = device.type();
  if (dt == at::kCPU && dtype == at::kHalf) return nullptr;
  const bool was = ac::is_autocast_enabled(dt);
  const at::ScalarType prev = ac::get_autocast_dtype(dt);
  ac::set_autocast_enabled(dt, true);
  ac::set_autocast_dtype(dt, dtype);
  ac::increment_nesting();
  return std::shared_ptr<void>(reinterpret_cast<void*>(1), [dt, was, prev](void*) {
    if (ac::decrement_nesting() == 0) ac::clear_cache();
    ac::set_autocast_enabled(dt, was);
    ac::set_autocast_dtype(dt, prev);
  });
#else
  if (device.is_cpu()) {
    if (dtype != at::kBFloat16) return nullptr;  // 1.13 CPU autocast knows bf16 only
    const bool was = ac::is_cpu_enabled();
    const at::ScalarType prev = ac::get_autocast_cpu_dtype();
    ac::set_cpu_enabled(true);
    ac::set_autocast_cpu_dtype(dtype);
    ac::increment_nesting();
    return std::shared_ptr<void>(reinterpret_cast<void*>(1), [was, prev](void*) {
      if (ac::decrement_nesting() == 0) ac::clear_cache();
      ac::set_cpu_enabled(was);
      ac::set_autocast_cpu_dtype(prev);
    });
  }
  if (!device.is_cuda()) return nullptr;
  const bool was = ac::is_enabled();
  const at::ScalarType prev = ac::get_autocast_gpu_dtype();
  ac::set_enabled(true);
  ac::set_autocast_gpu_dtype(dtype);
  ac::increment_nesting();
  return std::shared_ptr<void>(reinterpret_cast<void*>(1), [was, prev](void*) {
    if (ac::decrement_nesting() == 0) ac::clear_cache();
    ac::set_enabled(was);
    ac::set_autocast_gpu_dtype(prev);
  });
#endif
}

bool compiled_programs_supported() { return TORCH_VERSION_MAJOR >= 2; }

CompiledCall load_compiled_program(const std::string& path) {
#if TORCH_VERSION_MAJOR >= 2
  auto loader = std::make_shared<torch::inductor::AOTIModelPackageLoader>(path);
  return [loader](const std::vector<at::Tensor>& inputs) { return loader->run(inputs); };
#else
  throw UsageError(fmt::format("cannot load the compiled program '{}': this mtrain-worker is built against LibTorch "
                               "1.13, which has no AOTInductor loader",
                               path),
                   "build mtrain against PyTorch 2.x, or train the model as TorchScript (model.name torchscript)");
#endif
}

StorePtr make_tcp_store(const std::string& host, int port, bool is_server, int world,
                        std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions o;
  o.port = static_cast<std::uint16_t>(port);
  o.isServer = is_server;
  o.numWorkers = static_cast<std::size_t>(world);
  o.waitWorkers = true;
  o.timeout = timeout;
  return c10::make_intrusive<c10d::TCPStore>(host, o);
}

StorePtr make_hash_store() { return c10::make_intrusive<c10d::HashStore>(); }

StorePtr make_prefix_store(const std::string& prefix, const StorePtr& store) {
  return c10::make_intrusive<c10d::PrefixStore>(prefix, store);
}

}  // namespace mtrain::trainer::compat

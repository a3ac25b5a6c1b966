// `mtrain-worker build-info`: what LibTorch, CUDA and NCCL this worker was compiled against, for
// `mtrain env` (mtrain itself links no LibTorch, so it asks the worker); `build-info --facts FILE`
// writes the same build facts plus every operator this LibTorch registers, once, at build time
// (the launcher reads that file instead of starting the worker: `mtrain --version`, and the
// TorchScript compatibility check before any rank starts, docs/architecture.md §9).
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <caffe2/serialize/versions.h>
#include <torch/csrc/api/include/torch/version.h>
#include <torch/csrc/jit/runtime/operator.h>

#include <set>

#include <fstream>
#include <string>

#include "mtrain/trainer/bench/build_info.hpp"
#include "mtrain/trainer/comm/compat.hpp"
#ifdef MTRAIN_WITH_CUDA
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#endif

namespace mtrain::trainer {

namespace {

// The BLAS library this process actually mapped: Debian's LibTorch calls whatever
// libblas.so.3 the alternatives system points at (netlib's reference BLAS unless OpenBLAS or
// BLIS is installed), so only the loaded file says which one trains. First mapped file whose
// name looks like a BLAS, else "".
std::string loaded_blas() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    const auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string path = line.substr(slash);
    const std::string base = path.substr(path.rfind('/') + 1);
    if (base.rfind("libblas.so", 0) == 0 || base.rfind("libopenblas", 0) == 0 ||
        base.rfind("libblis", 0) == 0 || base.rfind("libmkl_rt", 0) == 0) {
      return path;
    }
  }
  return "";
}

}  // namespace

nlohmann::json build_facts() {
  using nlohmann::json;
  json cuda = {{"compiled", false}, {"version", nullptr}};
  json nccl = {{"compiled", compat::nccl_available()}, {"version", nullptr}};
#ifdef MTRAIN_WITH_CUDA
  cuda["compiled"] = true;
  cuda["version"] = compat::cuda_compiled_version();
  nccl["version"] = c10d::getNcclVersion();
#endif
  return {{"libtorch", TORCH_VERSION},
          {"cuda", cuda},
          {"nccl", nccl},
          {"gloo", true},
          {"file_format_max", static_cast<int64_t>(caffe2::serialize::kMaxSupportedFileFormatVersion)}};
}

nlohmann::json build_info() {
  nlohmann::json info = build_facts();
  info["cuda"]["devices"] = 0;
#ifdef MTRAIN_WITH_CUDA
  const auto& hooks = at::detail::getCUDAHooks();
  if (hooks.hasCUDA()) info["cuda"]["devices"] = hooks.getNumGPUs();
#endif
  info["threads"] = at::get_num_threads();
  info["blas"] = loaded_blas();
  return info;
}

std::vector<std::string> registered_operators() {
  std::set<std::string> names;  // sorted: the facts file is the same for the same LibTorch
  for (const auto& op : torch::jit::getAllOperators()) names.insert(op->schema().name());
  for (const auto& n : c10::Dispatcher::singleton().getAllOpNames()) names.insert(n.name);
  return {names.begin(), names.end()};
}

}  // namespace mtrain::trainer

// `mtrain-worker build-info`: what LibTorch, CUDA and NCCL this worker was compiled against, for
// `mtrain env` (mtrain itself links no LibTorch, so it asks the worker).
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/api/include/torch/version.h>

#include <fstream>
#include <string>

#include "mtrain/trainer/bench/comm_bench.hpp"
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

nlohmann::json build_info() {
  using nlohmann::json;
  json cuda = {{"compiled", false}, {"version", nullptr}, {"devices", 0}};
  json nccl = {{"compiled", compat::nccl_available()}, {"version", nullptr}};
#ifdef MTRAIN_WITH_CUDA
  cuda["compiled"] = true;
  const auto& hooks = at::detail::getCUDAHooks();
  if (hooks.hasCUDA()) {
    const long v = hooks.versionCUDART();  // e.g. 12010
    cuda["version"] = std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
    cuda["devices"] = hooks.getNumGPUs();
  }
  nccl["version"] = c10d::getNcclVersion();
#endif
  return {{"libtorch", TORCH_VERSION},
          {"cuda", cuda},
          {"nccl", nccl},
          {"gloo", true},
          {"threads", at::get_num_threads()},
          {"blas", loaded_blas()}};
}

}  // namespace mtrain::trainer

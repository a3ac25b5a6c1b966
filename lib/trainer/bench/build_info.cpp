// `mtrain-worker build-info`: what LibTorch, CUDA and NCCL this worker was compiled against, for
// `mtrain env` (mtrain itself links no LibTorch, so it asks the worker).
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/api/include/torch/version.h>

#include "mtrain/trainer/bench/comm_bench.hpp"
#include "mtrain/trainer/comm/compat.hpp"
#ifdef MTRAIN_WITH_CUDA
#include <torch/csrc/distributed/c10d/NCCLUtils.hpp>
#endif

namespace mtrain::trainer {

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
          {"threads", at::get_num_threads()}};
}

}  // namespace mtrain::trainer

#include "lib/launch/host_probe.hpp"

#include <sched.h>
#include <unistd.h>

#include <filesystem>

#include "lib/topology/gpu_list.hpp"

namespace mtrain::launch {

static int usable_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

static int driver_gpu_count() {
  std::error_code ec;
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    (void)e;
    ++n;
  }
  return n;
}

plan::HostFacts probe_host(const EnvMap& env) {
  plan::HostFacts f;
  char name[256] = {0};
  if (gethostname(name, sizeof(name) - 1) == 0 && name[0]) f.hostname = name;
  f.cpu_count = usable_cores();
  f.omp_num_threads_set = env.count("OMP_NUM_THREADS") > 0;
  f.nccl_async_error_handling_set = env.count("TORCH_NCCL_ASYNC_ERROR_HANDLING") > 0;
  auto cvd = env.find("CUDA_VISIBLE_DEVICES");
  if (cvd != env.end()) {
    f.gpu_pool = topology::parse_visible_devices(cvd->second);
    f.gpu_pool_source = "CUDA_VISIBLE_DEVICES=" + cvd->second;
  } else {
    for (int i = 0, n = driver_gpu_count(); i < n; ++i) f.gpu_pool.push_back(i);
    f.gpu_pool_source = "detected";
  }
  return f;
}

}  // namespace mtrain::launch

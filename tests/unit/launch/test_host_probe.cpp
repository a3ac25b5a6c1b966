// The host facts the plan needs (lib/launch/host_probe.cpp): the GPU pool from an inherited
// CUDA_VISIBLE_DEVICES (or the driver's list), whether OMP_NUM_THREADS is set, the usable cores
// (the affinity mask, as taskset or a cgroup cpuset narrows it) and the hostname.
#include <catch2/catch.hpp>

#include <sched.h>
#include <unistd.h>

#include <filesystem>

#include "lib/launch/host_probe.hpp"

using namespace mtrain::launch;

TEST_CASE("host_probe: CUDA_VISIBLE_DEVICES is the GPU pool and names its source", "[launch][host_probe]") {
  auto f = probe_host({{"CUDA_VISIBLE_DEVICES", "3,1"}});
  CHECK(f.gpu_pool == std::vector<int>{3, 1});
  CHECK(f.gpu_pool_source == "CUDA_VISIBLE_DEVICES=3,1");
  // Set but empty: no GPU at all, not the detected ones.
  f = probe_host({{"CUDA_VISIBLE_DEVICES", ""}});
  CHECK(f.gpu_pool.empty());
  CHECK(f.gpu_pool_source == "CUDA_VISIBLE_DEVICES=");
}

TEST_CASE("host_probe: without CUDA_VISIBLE_DEVICES the driver's GPUs are the pool", "[launch][host_probe]") {
  std::error_code ec;
  int driver = 0;
  for (auto it = std::filesystem::directory_iterator("/proc/driver/nvidia/gpus", ec);
       !ec && it != std::filesystem::directory_iterator(); ++it)
    ++driver;
  const auto f = probe_host({});
  CHECK(f.gpu_pool_source == "detected");
  REQUIRE(static_cast<int>(f.gpu_pool.size()) == driver);
  for (int i = 0; i < driver; ++i) CHECK(f.gpu_pool[static_cast<size_t>(i)] == i);
}

TEST_CASE("host_probe: OMP_NUM_THREADS, usable cores and hostname", "[launch][host_probe]") {
  CHECK(probe_host({{"OMP_NUM_THREADS", "4"}}).omp_num_threads_set);
  CHECK_FALSE(probe_host({{"OMP_NUM_THREAD", "4"}}).omp_num_threads_set);
  CHECK(probe_host({{"TORCH_NCCL_ASYNC_ERROR_HANDLING", "0"}}).nccl_async_error_handling_set);
  CHECK_FALSE(probe_host({}).nccl_async_error_handling_set);
  const auto f = probe_host({});
  cpu_set_t set;
  REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  CHECK(f.cpu_count == CPU_COUNT(&set));
  char name[256] = {0};
  REQUIRE(gethostname(name, sizeof name - 1) == 0);
  CHECK(f.hostname == name);
}

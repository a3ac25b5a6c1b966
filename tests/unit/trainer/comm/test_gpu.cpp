// [gpu] The communicator over NCCL on CUDA tensors: the same definitions the Gloo test checks,
// on every visible GPU (one rank thread per device, at most 4). In CPU-only builds, or where no
// GPU is visible, each test prints why it did not run and passes (Catch2 v2 has no skip).
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <algorithm>
#include <iostream>

#include "lib/trainer/comm/compat.hpp"
#include "ranks.hpp"

using namespace mtrain::trainer;

namespace {

// The number of GPU ranks to run, or 0 after printing why none.
int gpu_world() {
  if (!compat::nccl_available()) {
    std::cout << "SKIPPED [gpu]: this build has no CUDA/NCCL (configure with -DMTRAIN_WITH_CUDA=ON against a "
                 "CUDA LibTorch; see docs/gpu.md)\n";
    return 0;
  }
  const int n = compat::cuda_device_count();
  if (n == 0) std::cout << "SKIPPED [gpu]: no CUDA device is visible\n";
  return std::min(n, 4);
}

void run_nccl_ranks(int world, const std::function<void(Communicator&, const at::Device&)>& fn) {
  auto store = compat::make_hash_store();
  std::vector<std::future<void>> done;
  for (int r = 0; r < world; ++r) {
    done.push_back(std::async(std::launch::async, [=, &fn] {
      compat::select_cuda_device(r);
      CommOptions o;
      o.rank = r;
      o.world = world;
      o.timeout = std::chrono::seconds(60);
      o.backend = BackendKind::Nccl;
      Communicator comm(store, o);
      fn(comm, at::Device(at::kCUDA, static_cast<at::DeviceIndex>(r)));
    }));
  }
  for (auto& d : done) {
    if (d.wait_for(std::chrono::seconds(120)) != std::future_status::ready)
      throw std::runtime_error("a GPU rank thread did not finish within 120 s");
  }
  for (auto& d : done) d.get();
}

}  // namespace

TEST_CASE("NCCL collectives on CUDA tensors agree with their definition", "[trainer][comm][gpu]") {
  const int world = gpu_world();
  if (world == 0) return;
  run_nccl_ranks(world, [](Communicator& comm, const at::Device& dev) {
    const int r = comm.rank(), n = comm.world();
    const int64_t k = 1000;  // not a multiple of anything NCCL likes
    const auto f = at::TensorOptions().dtype(at::kFloat).device(dev);
    const float total = n * (n + 1) / 2.0f;

    auto t = at::full({7}, static_cast<float>(r + 1), f);
    comm.all_reduce(t).wait();
    RANK_CHECK(t.cpu().eq(total).all().item<bool>());

    auto in = at::arange(n * k, f) * static_cast<float>(r + 1);
    auto out = at::empty({k}, f);
    comm.reduce_scatter(in, out).wait();
    RANK_CHECK(out.cpu().equal(at::arange(r * k, (r + 1) * k, at::kFloat) * total));

    auto mine = at::full({k}, static_cast<float>(10 * r), f);
    auto all = at::empty({n * k}, f);
    comm.all_gather(mine, all).wait();
    for (int q = 0; q < n; ++q) RANK_CHECK(all.narrow(0, q * k, k).cpu().eq(10.0f * q).all().item<bool>());

    auto b = r == n - 1 ? at::arange(4, f) : at::zeros({4}, f);
    comm.broadcast(b, n - 1).wait();
    RANK_CHECK(b.cpu().equal(at::arange(4, at::kFloat)));

    // bf16 buffers (mixed-precision gathers and reductions) go over the wire as bf16.
    auto h = at::full({k}, 1.0, f.dtype(at::kBFloat16));
    comm.all_reduce(h).wait();
    RANK_CHECK(h.to(at::kFloat).cpu().eq(static_cast<float>(n)).all().item<bool>());
    comm.barrier();

    auto c = comm.counters();
    RANK_CHECK(c["all_reduce"].calls == 2);
    RANK_CHECK(c["reduce_scatter"].payload_bytes == n * k * 4);
  });
}

TEST_CASE("a CPU-only build says it has no CUDA instead of failing", "[trainer][comm][gpu]") {
  if (compat::nccl_available()) {
    CHECK(compat::cuda_device_count() >= 0);
    return;
  }
  CHECK(compat::cuda_device_count() == 0);
  auto store = compat::make_hash_store();
  CommOptions o;
  o.backend = BackendKind::Nccl;
  CHECK_THROWS_WITH(Communicator(store, o), Catch::Contains("CUDA"));
}

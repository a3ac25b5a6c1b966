// DDP equals one big batch: ranks as threads over HashStore + Gloo.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/module.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/grad_mode.h>

#include "lib/core/error.hpp"
#include "lib/trainer/strategy/strategy.hpp"
#include "ranks.hpp"

using namespace mtrain::trainer;

namespace {

// A small two-layer regressor with a deterministic init (same on every rank only after DDP's
// broadcast: ranks other than 0 start from a different seed on purpose).
struct TinyNet : torch::nn::Module {
  // A private generator: rank threads share the global one, so seeding it here would race.
  TinyNet(uint64_t seed, bool with_unused = false) {
    fc1 = register_module("fc1", torch::nn::Linear(8, 16));
    fc2 = register_module("fc2", torch::nn::Linear(16, 4));
    if (with_unused) spare = register_module("spare", torch::nn::Linear(4, 4));
    auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
    at::NoGradGuard no_grad;
    for (auto& p : parameters()) p.copy_(at::randn(p.sizes(), g) * 0.3);
  }
  at::Tensor forward(const at::Tensor& x) { return fc2->forward(at::tanh(fc1->forward(x))); }
  torch::nn::Linear fc1{nullptr}, fc2{nullptr}, spare{nullptr};
};

constexpr int64_t kGlobalBatch = 12;

// Global batch of step s; rank r of N takes rows r, r+N, … (the sampler's interleaving).
std::pair<at::Tensor, at::Tensor> batch(int64_t step, int rank, int world, int64_t rows = kGlobalBatch) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(1000 + step);
  auto x = at::randn({rows, 8}, g);
  auto y = at::randn({rows, 4}, g);
  auto idx = at::arange(rank, rows, world, at::kLong);
  return {x.index_select(0, idx), y.index_select(0, idx)};
}

StrategyOptions opts(mtrain::config::OptimizerName optim = mtrain::config::OptimizerName::Adamw) {
  StrategyOptions o;
  o.first_bucket_mb = 64.0 / (1024 * 1024);  // 16 floats: several buckets even for a tiny net
  o.bucket_cap_mb = 400.0 / (1024 * 1024);
  o.optim.name = optim;
  o.optim.weight_decay = 0.01;
  o.optim.momentum = 0.9;
  return o;
}

// Trains `steps` steps; each step has `accum` micro-batches splitting the rank's rows.
std::vector<at::Tensor> train(Communicator& comm, int steps, int accum, const StrategyOptions& o,
                              CommCounters* counters = nullptr) {
  auto net = std::make_shared<TinyNet>(7 + comm.rank());
  auto ddp = make_ddp(o, comm);
  ddp->setup(net);
  comm.reset_counters();
  for (int s = 0; s < steps; ++s) {
    auto [x, y] = batch(s, comm.rank(), comm.world());
    const int64_t m = x.size(0) / accum;
    for (int a = 0; a < accum; ++a) {
      auto xs = x.narrow(0, a * m, m), ys = y.narrow(0, a * m, m);
      ddp->forward_backward([&] { return at::mse_loss(net->forward(xs), ys); }, a == accum - 1,
                            1.0 / accum);
    }
    ddp->step(1e-2);
    if (counters && s == 0) *counters = comm.counters();
  }
  std::vector<at::Tensor> out;
  for (auto& p : net->parameters()) out.push_back(p.detach().clone());
  return out;
}

double max_diff(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, (a[i] - b[i]).abs().max().item<double>());
  return d;
}

std::vector<at::Tensor> run(int world, int steps, int accum, const StrategyOptions& o, int64_t shm_chunk = 0) {
  std::vector<at::Tensor> result;
  testing::run_ranks(world, [&](Communicator& comm) {
    if (shm_chunk > 0 && world > 1) RANK_REQUIRE(comm.uses_shared_memory());
    auto w = train(comm, steps, accum, o);
    if (comm.rank() == world - 1) result = w;  // the last rank: proves the replicas agree too
  }, shm_chunk);
  return result;
}

}  // namespace

TEST_CASE("DDP at world 2 and 3 ends with the weights of world 1 (20 AdamW steps)",
          "[trainer][ddp]") {
  at::set_num_threads(1);
  auto o = opts();
  auto w1 = run(1, 20, 1, o);
  auto w2 = run(2, 20, 1, o);
  auto w3 = run(3, 20, 1, o);
  CHECK(max_diff(w1, w2) <= 1e-5);
  CHECK(max_diff(w1, w3) <= 1e-5);
  // And training did move the weights (the comparison is not vacuous).
  auto w0 = run(1, 0, 1, o);
  CHECK(max_diff(w0, w1) > 1e-3);
}

TEST_CASE("DDP with the shared-memory all-reduce at world 2, 3 and 4 matches world 1", "[trainer][ddp]") {
  at::set_num_threads(1);
  auto o = opts();
  o.grad_clip = 0.5;
  auto w1 = run(1, 20, 1, o);
  // 1000-float slots: every bucket crosses several chunks, with a ragged last one.
  for (int world : {2, 3, 4}) {
    INFO("world " << world);
    CHECK(max_diff(w1, run(world, 20, 1, o, 1000)) <= 1e-5);
  }
}

TEST_CASE("DDP with SGD momentum + nesterov and clipping matches world 1", "[trainer][ddp]") {
  at::set_num_threads(1);
  auto o = opts(mtrain::config::OptimizerName::Sgd);
  o.optim.nesterov = true;
  o.grad_clip = 0.5;
  CHECK(max_diff(run(1, 10, 1, o), run(2, 10, 1, o)) <= 1e-5);
}

TEST_CASE("4 accumulated micro-batches equal one 4x batch", "[trainer][ddp]") {
  at::set_num_threads(1);
  auto o = opts();
  auto big = run(1, 10, 1, o);
  auto acc = run(1, 10, 4, o);
  CHECK(max_diff(big, acc) <= 1e-5);
  // Accumulation combined with world 2 (2 micro-batches of 3 per rank).
  CHECK(max_diff(big, run(2, 10, 2, o)) <= 1e-5);
}

TEST_CASE("DDP sends 2Ψ(N−1)/N·4 bytes per step and nothing on accumulation micro-steps",
          "[trainer][ddp]") {
  at::set_num_threads(1);
  for (int world : {2, 3}) {
    testing::run_ranks(world, [&](Communicator& comm) {
      CommCounters c;
      train(comm, 1, 2, opts(), &c);
      const double psi = 8 * 16 + 16 + 16 * 4 + 4;
      const double n = world;
      RANK_REQUIRE(c.count("all_reduce") == 1);
      RANK_CHECK(c.size() == 1);
      RANK_CHECK(c["all_reduce"].payload_bytes == psi * 4);
      RANK_CHECK(c["all_reduce"].wire_bytes == Approx(2 * psi * (n - 1) / n * 4).epsilon(1e-12));
      RANK_CHECK(c["all_reduce"].calls > 2);  // several buckets, all in the sync micro-step
    });
  }
}

TEST_CASE("parameters without gradient: an error unless find_unused_parameters",
          "[trainer][ddp]") {
  at::set_num_threads(1);
  for (bool allow : {false, true}) {
    testing::run_ranks(2, [&](Communicator& comm) {
      auto net = std::make_shared<TinyNet>(3, /*with_unused=*/true);
      auto o = opts();
      o.find_unused_parameters = allow;
      auto ddp = make_ddp(o, comm);
      ddp->setup(net);
      auto [x, y] = batch(0, comm.rank(), 2);
      auto fb = [&] {
        ddp->forward_backward([&] { return at::mse_loss(net->forward(x), y); }, true, 1.0);
      };
      if (allow) {
        fb();
        ddp->step(1e-2);
      } else {
        RANK_CHECK_THROWS_WITH(fb(), Catch::Contains("spare.weight") || Catch::Contains("spare.bias"));
      }
    });
  }
}

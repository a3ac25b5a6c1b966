// Checkpoint state crosses strategies and world sizes; fp16 overflow skips a step on every
// rank; bf16 trains.
#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <map>
#include <mutex>

#include "harness.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/optim/loss_scale.hpp"
#include "lib/trainer/strategy/wrap_policy.hpp"

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

using Weights = std::vector<std::pair<std::string, at::Tensor>>;

// Every rank's pieces assembled into whole tensors (what a checkpoint directory holds), with a
// count of how often each element was written.
class MemorySource final : public TensorSource {
 public:
  void add(const TensorPiece& p) {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t numel = 1;
    for (auto d : p.global_shape) numel *= d;
    auto& t = full_[p.name];
    if (!t.defined()) {
      t = at::zeros({numel}, p.dtype == at::kLong ? at::kLong : at::kDouble);
      count_[p.name] = at::zeros({numel}, at::kInt);
      shape_[p.name] = p.global_shape;
    }
    const int64_t n = p.data.numel();
    t.narrow(0, p.offset, n).copy_(p.data.reshape({-1}));
    count_[p.name].narrow(0, p.offset, n).add_(1);
  }
  // Every element of every tensor written exactly once.
  bool exactly_once() const {
    for (const auto& [name, c] : count_) {
      if (!c.eq(1).all().item<bool>()) return false;
    }
    return !count_.empty();
  }
  bool has(const std::string& name) const override { return full_.count(name) > 0; }
  std::vector<int64_t> shape(const std::string& name) const override { return shape_.at(name); }
  at::Tensor read(const std::string& name, int64_t offset, int64_t numel) const override {
    const at::Tensor& t = full_.at(name);
    return t.narrow(0, offset, numel).to(t.scalar_type() == at::kLong ? at::kLong : at::kFloat);
  }
  double max_diff(const MemorySource& o) const {
    if (full_.size() != o.full_.size()) return 1e30;
    double d = 0;
    for (const auto& [name, t] : full_) {
      auto it = o.full_.find(name);
      if (it == o.full_.end()) return 1e30;
      d = std::max(d, (t.to(at::kDouble) - it->second.to(at::kDouble)).abs().max().item<double>());
    }
    return d;
  }

 private:
  std::mutex mu_;
  std::map<std::string, at::Tensor> full_, count_;
  std::map<std::string, std::vector<int64_t>> shape_;
};

struct Saved {
  std::shared_ptr<MemorySource> src = std::make_shared<MemorySource>();
  Weights weights;
};

Saved save_after_training(const Config& c, int world, int steps) {
  Saved out;
  run_ranks(world, [&](Communicator& comm) {
    const ModelSpec spec = tiny_gpt();
    auto model = make_model(spec, 1);
    auto s = make_strategy(c.strategy, c.opts, comm);
    s->setup(model);
    for (int step = 0; step < steps; ++step) {
      Batch b = gpt_batch(step, comm.rank(), world, spec);
      s->forward_backward([&] { return model->loss(b); }, true, 1.0);
      s->step(1e-2);
    }
    for (const auto& p : s->state_pieces()) out.src->add(p);
    auto w = s->consolidated_parameters();
    if (comm.rank() == 0) out.weights = w;
  });
  return out;
}

// Loads `saved` under c at `world`; returns the consolidated weights and the state it would save.
std::pair<Weights, std::shared_ptr<MemorySource>> load(const Config& c, int world, const MemorySource& saved) {
  std::pair<Weights, std::shared_ptr<MemorySource>> out{{}, std::make_shared<MemorySource>()};
  run_ranks(world, [&](Communicator& comm) {
    auto model = make_model(tiny_gpt(), 77 + comm.rank());
    auto s = make_strategy(c.strategy, c.opts, comm);
    s->setup(model);
    s->load_state(saved);
    RANK_CHECK(s->optimizer_steps() == 3);
    for (const auto& p : s->state_pieces()) out.second->add(p);
    auto w = s->consolidated_parameters();
    if (comm.rank() == 0) out.first = w;
  });
  return out;
}

}  // namespace

TEST_CASE("state saved by every strategy at world 3 loads under every strategy at world 2 and 4",
          "[trainer][strategy][checkpoint]") {
  at::set_num_threads(1);
  for (const auto& saver : all_configs(3)) {
    const Saved saved = save_after_training(saver, 3, 3);
    INFO("saved by " << saver.label);
    REQUIRE(saved.src->exactly_once());
    for (int world : {2, 4}) {
      for (const auto& loader : all_configs(world)) {
        if (world == 4 && loader.label != "zero3" && loader.label != "fsdp-HYBRID_SHARD" &&
            loader.label != "ddp")
          continue;
        INFO("loaded by " << loader.label << " at world " << world);
        auto [weights, resaved] = load(loader, world, *saved.src);
        CHECK(max_diff(weights, saved.weights) == 0);
        CHECK(resaved->exactly_once());
        CHECK(resaved->max_diff(*saved.src) == 0);  // optimiser state and step too
      }
    }
  }
}

namespace {

// Elementwise-only model: LibTorch 1.13 has no fp16 matmul on the CPU, so the fp16 tests use
// operators that do have Half kernels. 9 parameters.
struct HalfNet : torch::nn::Module {
  HalfNet() {
    w = register_parameter("w", at::linspace(-0.5, 0.5, 7));
    b = register_parameter("b", at::full({2}, 0.1));
  }
  at::Tensor loss(const at::Tensor& x, const at::Tensor& y) {
    at::Tensor pred = (x.to(w.scalar_type()) * w).sum(-1) + b.sum();
    at::Tensor d = pred - y.to(w.scalar_type());
    return (d * d).sum() / static_cast<double>(x.size(0));
  }
  at::Tensor w, b;
};

std::pair<at::Tensor, at::Tensor> half_batch(int64_t step, int rank, int world) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(900 + step);
  auto x = at::randn({8, 7}, g);
  auto y = at::randn({8}, g);
  auto idx = at::arange(rank, 8, world, at::kLong);
  return {x.index_select(0, idx), y.index_select(0, idx)};
}

}  // namespace

TEST_CASE("fp16: an overflow on one rank skips exactly that step on every rank and halves the scale",
          "[trainer][strategy][precision]") {
  at::set_num_threads(1);
  for (const char* strategy : {"ddp", "zero1", "zero2", "zero3", "fsdp"}) {
    INFO(strategy);
    run_ranks(2, [&](Communicator& comm) {
      auto net = std::make_shared<HalfNet>();
      StrategyOptions o = base_options();
      o.precision = mtrain::config::Precision::Fp16;
      o.loss_scale.initial_scale_power = 8;
      o.loss_scale.hysteresis = 1;
      auto s = make_strategy(strategy, o, comm);
      s->setup(net);
      RANK_CHECK(net->w.scalar_type() == at::kHalf);
      Weights before_bad;
      for (int step = 0; step < 5; ++step) {
        auto [x, y] = half_batch(step, comm.rank(), 2);
        if (step == 2) before_bad = s->consolidated_parameters();
        s->forward_backward(
            [&] {
              at::Tensor l = net->loss(x, y);
              // The injected overflow: only rank 1, only step 2.
              if (step == 2 && comm.rank() == 1) l = l * std::numeric_limits<double>::infinity();
              return l;
            },
            true, 1.0);
        const StepResult r = s->step(1e-2);
        RANK_CHECK(r.skipped == (step == 2));
        RANK_CHECK(r.loss_scale == (step <= 2 ? 256.0 : 128.0));
        if (step == 2) {
          const Weights after = s->consolidated_parameters();
          if (comm.rank() == 0) RANK_CHECK(max_diff(before_bad, after) == 0);
        }
      }
      RANK_CHECK(s->optimizer_steps() == 4);
      const Weights end = s->consolidated_parameters();
      if (comm.rank() == 0) RANK_CHECK(max_diff(before_bad, end) > 1e-4);  // later steps did train
    });
  }
}

TEST_CASE("bf16 compute with fp32 masters: gpt loss falls under ddp, zero3 and fsdp", "[trainer][strategy][precision]") {
  at::set_num_threads(1);
  for (const char* strategy : {"ddp", "zero2", "zero3", "fsdp"}) {
    INFO(strategy);
    run_ranks(2, [&](Communicator& comm) {
      const ModelSpec spec = tiny_gpt(16, 2);
      auto model = make_model(spec, 5);
      StrategyOptions o = base_options();
      o.precision = mtrain::config::Precision::Bf16;
      auto s = make_strategy(strategy, o, comm);
      s->setup(model);
      RANK_CHECK(model->parameters().front().scalar_type() == at::kBFloat16);
      Batch b = gpt_batch(0, comm.rank(), 2, spec);
      double first = 0, last = 0;
      for (int step = 0; step < 30; ++step) {
        const double l = s->forward_backward([&] { return model->loss(b); }, true, 1.0).item<double>();
        if (step == 0) first = l;
        last = l;
        s->step(1e-2);
      }
      RANK_CHECK(std::isfinite(last));
      RANK_CHECK(last < 0.7 * first);
      const auto w = s->consolidated_parameters();
      RANK_CHECK(w.front().second.scalar_type() == at::kFloat);
    });
  }
}

TEST_CASE("dynamic loss scale: hysteresis, window, floor, a fixed scale never moves",
          "[trainer][strategy][precision]") {
  LossScaleOptions o;
  o.initial_scale_power = 4;
  o.loss_scale_window = 3;
  o.hysteresis = 2;
  o.min_loss_scale = 4;
  LossScaler s(o, true);
  CHECK(s.scale() == 16);
  s.update(true);  // first overflow: hysteresis absorbs it
  CHECK(s.scale() == 16);
  s.update(true);  // second: halves
  CHECK(s.scale() == 8);
  s.update(false), s.update(false);
  CHECK(s.scale() == 8);
  s.update(false);  // third clean step in a row: doubles
  CHECK(s.scale() == 16);
  for (int i = 0; i < 10; ++i) s.update(true);
  CHECK(s.scale() == 4);  // never below min_loss_scale
  CHECK(s.skipped_steps() == 12);
  o.loss_scale = 128;
  LossScaler fixed(o, true);
  fixed.update(true), fixed.update(true), fixed.update(false), fixed.update(false), fixed.update(false);
  CHECK(fixed.scale() == 128);
  LossScaler off(o, false);
  CHECK(off.scale() == 1);
}

TEST_CASE("FSDP wrap policies and ZeRO units cover every parameter once", "[trainer][strategy]") {
  ParamList p;
  p.names = {"wte.weight", "blocks.0.ln.weight", "blocks.0.fc.weight", "blocks.0.fc.bias",
             "blocks.1.ln.weight", "blocks.1.fc.weight", "blocks.1.fc.bias", "head.weight"};
  p.numels = {50, 4, 40, 10, 4, 40, 10, 50};
  auto layer = fsdp_units(p, mtrain::config::WrapPolicy::Layer, {"blocks.0", "blocks.1"}, 0);
  REQUIRE(layer.size() == 3);
  CHECK(layer[0].params == std::vector<size_t>{1, 2, 3});
  CHECK(layer[1].params == std::vector<size_t>{4, 5, 6});
  CHECK(layer[2].params == std::vector<size_t>{0, 7});
  CHECK(layer[2].pinned);
  // size (torch's size_based policy, children first): blocks.0.fc and blocks.1.fc (50 each)
  // reach 45, then the top-level wte and head (50 each); the LayerNorm leftovers (4 + 4) never
  // do, so they stay in the root unit.
  auto size = fsdp_units(p, mtrain::config::WrapPolicy::Size, {}, 45);
  REQUIRE(size.size() == 5);
  CHECK(size[0].params == std::vector<size_t>{0});
  CHECK(size[1].params == std::vector<size_t>{2, 3});
  CHECK(size[2].params == std::vector<size_t>{5, 6});
  CHECK(size[3].params == std::vector<size_t>{7});
  CHECK(size[4].params == std::vector<size_t>{1, 4});
  CHECK(size[4].pinned);
  CHECK(fsdp_units(p, mtrain::config::WrapPolicy::None, {}, 0).size() == 1);
  auto buckets = bucket_units(p, 60);  // reverse order, at most 60 elements each
  REQUIRE(buckets.size() == 4);
  CHECK(buckets[0].params == std::vector<size_t>{6, 7});
  auto modules = module_units(p, 11);  // under 11 elements: persistent
  REQUIRE(modules.size() == 5);
  CHECK(modules.back().persistent);
  CHECK(modules.back().params == std::vector<size_t>{1, 3, 4, 6});
  // Leaf modules (a TorchScript model's fsdp.wrap_module_types blocks under ZeRO-3) are one
  // unit each instead of one per submodule.
  CHECK(module_units(p, 0).size() == 6);
  auto leaves = module_units(p, 0, {"blocks.0", "blocks.1"});
  REQUIRE(leaves.size() == 4);
  CHECK(leaves[1].label == "blocks.0");
  CHECK(leaves[1].params == std::vector<size_t>{1, 2, 3});
  CHECK(leaves[2].params == std::vector<size_t>{4, 5, 6});
  CHECK(leaves[3].params == std::vector<size_t>{7});
}

TEST_CASE("the export reads resident parameters in place and matches the consolidated weights",
          "[trainer][strategy][export]") {
  // ZeRO-1/2, NO_SHARD and DDP hold every parameter on every rank: exporting them gathered a
  // fresh copy of each unit (ZeRO-2: +4Ψ on every rank at the end of the run) or cloned the
  // whole model at once (DDP). They are read where they are now; the sharded modes still gather.
  at::set_num_threads(1);
  const int world = 2;
  for (const auto& c : all_configs(world)) {
    INFO(c.label);
    const bool resident = c.label == "ddp" || c.label == "zero1" || c.label == "zero2" || c.label == "fsdp-NO_SHARD";
    run_ranks(world, [&](Communicator& comm) {
      const ModelSpec spec = tiny_gpt();
      auto model = make_model(spec, 1);
      auto s = make_strategy(c.strategy, c.opts, comm);
      s->setup(model);
      for (int step = 0; step < 2; ++step) {
        Batch b = gpt_batch(step, comm.rank(), world, spec);
        s->forward_backward([&] { return model->loss(b); }, true, 1.0);
        s->step(1e-2);
      }
      const Weights want = s->consolidated_parameters();
      std::map<std::string, at::Tensor> live;
      for (const auto& p : model->named_parameters()) live[p.key()] = p.value();
      size_t i = 0, in_place = 0;
      for (const auto& e : s->export_parameters()) {  // every rank, in order: collective
        const at::Tensor t = e.data();
        RANK_REQUIRE(i < want.size());
        RANK_CHECK(want[i].first == e.name);
        if (comm.rank() == 0) RANK_CHECK(at::equal(t, want[i].second));
        const auto it = live.find(e.name);
        if (it != live.end() && t.is_alias_of(it->second)) ++in_place;
        ++i;
      }
      RANK_CHECK(i == want.size());
      if (resident) {
        RANK_CHECK(in_place == want.size());
      } else if (c.label.find("persist") == std::string::npos) {  // a persistent unit is resident
        RANK_CHECK(in_place == 0);
      }
    });
  }
}

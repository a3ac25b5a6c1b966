#include <catch2/catch.hpp>

#include <ATen/ATen.h>

#include "lib/trainer/optim/clip.hpp"
#include "lib/trainer/optim/optimizer.hpp"
#include "lib/trainer/optim/schedule.hpp"

using namespace mtrain::trainer;

TEST_CASE("fused AdamW equals the tensor-op formula of torch.optim.AdamW", "[trainer][optim]") {
  OptimOptions o;
  o.weight_decay = 0.1;
  auto p = at::randn({1000});
  auto p_ref = p.clone();
  auto m = at::zeros({1000}), v = at::zeros({1000});
  auto opt = make_adamw(o, 1000, p.options());
  for (int t = 1; t <= 5; ++t) {
    auto g = at::randn({1000});
    opt->step(p, g, 1e-2);
    p_ref.mul_(1 - 1e-2 * 0.1);
    m.mul_(0.9).add_(g, 0.1);
    v.mul_(0.999).addcmul_(g, g, 0.001);
    auto denom = (v.sqrt() / std::sqrt(1 - std::pow(0.999, t))).add_(1e-8);
    p_ref.addcdiv_(m, denom, -1e-2 / (1 - std::pow(0.9, t)));
  }
  CHECK((p - p_ref).abs().max().item<double>() < 1e-6);
  CHECK(opt->steps() == 5);
  CHECK(opt->state().size() == 2);
}

TEST_CASE("SGD momentum and nesterov follow torch.optim.SGD", "[trainer][optim]") {
  OptimOptions o;
  o.name = mtrain::config::OptimizerName::Sgd;
  o.momentum = 0.9;
  o.nesterov = true;
  o.weight_decay = 0.01;
  auto p = at::ones({3});
  auto opt = make_sgd(o, 3, p.options());
  auto g = at::full({3}, 0.5f);
  opt->step(p, g, 0.1);  // d = 0.5 + 0.01 = 0.51; buf = 0.51; nesterov d = 0.51 + 0.9·0.51
  CHECK(p[0].item<double>() == Approx(1 - 0.1 * 0.51 * 1.9));
}

TEST_CASE("schedules: warmup, cosine, step, linear", "[trainer][optim]") {
  ScheduleOptions s;
  s.lr = 1.0;
  s.warmup_steps = 4;
  s.name = mtrain::config::ScheduleName::Cosine;
  CHECK(learning_rate(s, 0, 104) == Approx(0.25));
  CHECK(learning_rate(s, 3, 104) == Approx(1.0));
  CHECK(learning_rate(s, 54, 104) == Approx(0.5));
  s.name = mtrain::config::ScheduleName::Step;
  s.step_size = 10;
  s.gamma = 0.5;
  CHECK(learning_rate(s, 4 + 25, 104) == Approx(0.25));
  s.name = mtrain::config::ScheduleName::Linear;
  s.warmup_steps = 0;
  s.start_factor = 0.5;
  s.end_factor = 1.0;
  s.total_iters = 10;
  CHECK(learning_rate(s, 5, 100) == Approx(0.75));
  CHECK(learning_rate(s, 50, 100) == Approx(1.0));
  s.name = mtrain::config::ScheduleName::Constant;
  CHECK(learning_rate(s, 77, 100) == Approx(1.0));
}

TEST_CASE("clipping scales to the global norm", "[trainer][optim]") {
  auto a = at::full({4}, 3.0f), b = at::full({9}, 4.0f / 3);  // norm² = 36 + 16 = 52
  std::vector<at::Tensor> gs{a, b};
  const double n = clip_grad_norm(gs, 1.0, nullptr);
  CHECK(n == Approx(std::sqrt(52.0)));
  CHECK(global_grad_norm(gs, nullptr) == Approx(1.0).epsilon(1e-5));
}

TEST_CASE("the optimisers leave the gradient zeroed when asked", "[trainer][optim]") {
  for (const auto name : {mtrain::config::OptimizerName::Adamw, mtrain::config::OptimizerName::Sgd}) {
    OptimOptions o;
    o.name = name;
    o.momentum = 0.9;
    auto p = at::ones({5000});
    auto g = at::full({5000}, 0.25f);
    auto opt = make_optimizer(o, 5000, p.options());
    opt->step(p, g, 0.1, /*zero_grad=*/true);
    INFO(mtrain::config::to_string(name));
    CHECK(g.abs().max().item<float>() == 0.0f);
    CHECK(p.max().item<float>() < 1.0f);
  }
}

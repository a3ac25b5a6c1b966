// The default job's learning curve, without the distributed loop: gpt (4 layers, n_embd 128,
// block 64) on the embedded corpus, AdamW lr 1e-3 with the default cosine schedule, 200 steps of
// 2 ranks × 16 samples — the two ranks' micro-batches of each step (from the sampler) are
// concatenated, which is the gradient DDP averages. Hidden ("[.]"): about a minute of CPU; run
// with `test_trainer_data "[gpt-corpus]"`.
#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/loop/train_job.hpp"
#include "lib/trainer/data/sampler.hpp"
#include "lib/trainer/model/model.hpp"

#include <catch2/catch.hpp>
#include <torch/optim/adamw.h>

#include <cmath>
#include <iostream>

using namespace mtrain::trainer;

TEST_CASE("gpt: the default job's loss falls on the embedded corpus", "[.][gpt-corpus]") {
  const auto job = nlohmann::json::parse(R"({"model": {"name": "gpt"}})");
  const TrainJob tj = train_job_from_json(job);
  const ModelSpec& m = tj.model;
  const DataSpec& d = tj.data;
  REQUIRE(d.name == mtrain::config::DataName::Text);
  auto data = make_dataset(d, m, Split::Train, 0);
  auto val = make_dataset(d, m, Split::Val, 0);
  auto model = make_model(m, 0);
  torch::optim::AdamW opt(model->parameters(),
                          torch::optim::AdamWOptions(1e-3).betas({0.9, 0.999}).weight_decay(0));
  const int world = 2, steps = 200;
  const int64_t batch = 16;
  std::vector<std::vector<int64_t>> ranks;
  int64_t epoch = 0, pos = 0;
  auto refill = [&] {
    ranks.clear();
    for (int r = 0; r < world; ++r)
      ranks.push_back(rank_indices({data->size(), r, world, 0, true, true}, epoch));
  };
  refill();
  double first = 0, last = 0;
  for (int step = 0; step < steps; ++step) {
    if (pos + batch > static_cast<int64_t>(ranks[0].size())) {
      ++epoch;
      pos = 0;
      refill();
    }
    std::vector<int64_t> idx;
    for (int r = 0; r < world; ++r)
      idx.insert(idx.end(), ranks[static_cast<size_t>(r)].begin() + pos,
                 ranks[static_cast<size_t>(r)].begin() + pos + batch);
    pos += batch;
    const double lr = 1e-3 * 0.5 * (1 + std::cos(M_PI * step / steps));
    for (auto& g : opt.param_groups()) g.options().set_lr(lr);
    opt.zero_grad();
    const at::Tensor loss = model->loss(data->batch(idx));
    loss.backward();
    opt.step();
    const double l = loss.item<double>();
    if (step == 0) first = l;
    last = l;
    if (step % 20 == 0 || step == steps - 1)
      std::cout << "step " << step << " loss " << l << " epoch " << epoch << "\n";
  }
  std::vector<int64_t> all(static_cast<size_t>(val->size()));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
  const EvalStats st = model->evaluate(val->batch(all));
  const double val_loss = st.loss_sum / static_cast<double>(st.count);
  std::cout << "first " << first << " last " << last << " val " << val_loss << "\n";
  CHECK(first > 5.0);
  CHECK(last < 3.0);
  CHECK(val_loss < 3.0);
}

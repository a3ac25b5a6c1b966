#include "lib/core/error.hpp"
#include "lib/trainer/data/dataset.hpp"
#include "lib/trainer/loop/train_job.hpp"
#include "lib/trainer/model/model.hpp"

#include <catch2/catch.hpp>
#include <torch/csrc/autograd/autograd.h>

#include <cmath>

using namespace mtrain::trainer;

namespace {

ModelSpec tiny_gpt() {
  ModelSpec s;
  s.name = mtrain::config::ModelName::Gpt;
  s.n_layer = 2;
  s.n_head = 2;
  s.n_embd = 16;
  s.block_size = 8;
  s.vocab_size = 32;
  return s;
}

ModelSpec tiny_mlp() {
  ModelSpec s;
  s.name = mtrain::config::ModelName::Mlp;
  s.input_dim = 8;
  s.hidden = 16;
  s.depth = 3;
  s.num_classes = 4;
  return s;
}

std::vector<std::string> param_names(TaskModel& m) {
  std::vector<std::string> out;
  for (const auto& p : m.named_parameters()) out.push_back(p.key());
  return out;
}

// loss → backward fills a finite gradient of the right shape for every parameter.
void check_backward(TaskModel& m, const Batch& b) {
  m.zero_grad();
  const at::Tensor loss = m.loss(b);
  REQUIRE(loss.dim() == 0);
  REQUIRE(std::isfinite(loss.item<double>()));
  loss.backward();
  for (const auto& p : m.named_parameters()) {
    CAPTURE(p.key());
    REQUIRE(p.value().grad().defined());
    REQUIRE(p.value().grad().sizes() == p.value().sizes());
    REQUIRE(at::isfinite(p.value().grad()).all().item<bool>());
  }
}

bool same_weights(TaskModel& a, TaskModel& b) {
  auto pa = a.named_parameters(), pb = b.named_parameters();
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (pa[i].key() != pb[i].key() || !pa[i].value().equal(pb[i].value())) return false;
  return true;
}

}  // namespace

TEST_CASE("models: every name of the table is built, inconsistent specs fail", "[model]") {
  for (const auto& name : mtrain::config::choice_names<mtrain::config::ModelName>()) {
    const auto id = mtrain::config::parse_choice<mtrain::config::ModelName>(name);
    REQUIRE(id.has_value());
    // A file or a package: test_torchscript.cpp, tests/e2e/compiled.
    if (*id == mtrain::config::ModelName::Torchscript || *id == mtrain::config::ModelName::Compiled) continue;
    ModelSpec s = tiny_gpt();
    s.name = *id;
    s.num_classes = 4;
    CHECK(make_model(s, 0) != nullptr);
  }
  ModelSpec bad = tiny_gpt();
  bad.n_embd = 15;  // not divisible by 2 heads
  CHECK_THROWS_AS(make_model(bad, 0), mtrain::Error);
}

TEST_CASE("models: spec from the resolved job, defaults for missing keys", "[model]") {
  const auto job = nlohmann::json::parse(R"({"model": {"name": "mlp", "hidden": 64}})");
  const ModelSpec s = train_job_from_json(job).model;
  CHECK(s.name == mtrain::config::ModelName::Mlp);
  CHECK(s.hidden == 64);
  CHECK(s.depth == 3);
  CHECK(s.n_embd == 128);
  CHECK(s.block_size == 64);
}

TEST_CASE("mlp: shapes, parameter names, backward", "[model]") {
  auto m = make_model(tiny_mlp(), 1);
  CHECK(param_names(*m) == std::vector<std::string>{"layers.0.weight", "layers.0.bias",
                                                    "layers.1.weight", "layers.1.bias",
                                                    "layers.2.weight", "layers.2.bias"});
  CHECK(m->named_parameters()["layers.0.weight"].sizes() == at::IntArrayRef{16, 8});
  CHECK(m->named_parameters()["layers.2.weight"].sizes() == at::IntArrayRef{4, 16});
  CHECK(m->block_prefixes() == std::vector<std::string>{"layers.0", "layers.1", "layers.2"});
  CHECK_FALSE(m->is_language_model());
  CHECK(m->tokens_per_sample() == 1);
  Batch b{at::randn({5, 8}), at::randint(0, 4, {5}, at::kLong)};
  CHECK(m->forward(b.input).sizes() == at::IntArrayRef{5, 4});
  check_backward(*m, b);
  const EvalStats st = m->evaluate(b);
  CHECK(st.count == 5);
  CHECK(st.correct >= 0);
  CHECK(st.correct <= 5);
  CHECK(st.loss_sum == Approx(m->loss(b).item<double>() * 5).epsilon(1e-5));
  CHECK_THROWS_AS(m->forward(at::randn({5, 7})), mtrain::Error);
}

TEST_CASE("gpt: shapes, parameter names, backward, initial loss ~ ln(vocab)", "[model]") {
  const ModelSpec s = tiny_gpt();
  auto m = make_model(s, 3);
  const auto names = param_names(*m);
  const std::vector<std::string> head = {"wte.weight", "wpe.weight", "blocks.0.ln_1.weight",
                                         "blocks.0.ln_1.bias", "blocks.0.attn.c_attn.weight",
                                         "blocks.0.attn.c_attn.bias", "blocks.0.attn.c_proj.weight",
                                         "blocks.0.attn.c_proj.bias", "blocks.0.ln_2.weight",
                                         "blocks.0.ln_2.bias", "blocks.0.mlp.c_fc.weight",
                                         "blocks.0.mlp.c_fc.bias", "blocks.0.mlp.c_proj.weight",
                                         "blocks.0.mlp.c_proj.bias"};
  REQUIRE(names.size() == 2 + 12 * 2 + 2 + 1);
  CHECK(std::vector<std::string>(names.begin(), names.begin() + 14) == head);
  CHECK(names[14] == "blocks.1.ln_1.weight");
  CHECK(names[names.size() - 3] == "ln_f.weight");
  CHECK(names.back() == "lm_head.weight");  // untied head, no bias
  auto params = m->named_parameters();
  CHECK(params["wte.weight"].sizes() == at::IntArrayRef{32, 16});
  CHECK(params["wpe.weight"].sizes() == at::IntArrayRef{8, 16});
  CHECK(params["blocks.1.attn.c_attn.weight"].sizes() == at::IntArrayRef{48, 16});
  CHECK(params["lm_head.weight"].sizes() == at::IntArrayRef{32, 16});
  CHECK(params["blocks.0.attn.c_attn.bias"].abs().max().item<float>() == 0.0f);
  const double wte_std = params["wte.weight"].std().item<double>();
  CHECK(wte_std > 0.015);
  CHECK(wte_std < 0.025);
  CHECK(m->block_prefixes() == std::vector<std::string>{"blocks.0", "blocks.1"});
  CHECK(m->is_language_model());
  CHECK(m->tokens_per_sample() == 8);

  const at::Tensor x = at::randint(0, 32, {3, 8}, at::kLong);
  const Batch b{x, at::randint(0, 32, {3, 8}, at::kLong)};
  CHECK(m->forward(x).sizes() == at::IntArrayRef{3, 8, 32});
  CHECK(m->forward(x.slice(1, 0, 5)).sizes() == at::IntArrayRef{3, 5, 32});
  CHECK(m->loss(b).item<double>() == Approx(std::log(32.0)).margin(0.1));
  check_backward(*m, b);
  const EvalStats st = m->evaluate(b);
  CHECK(st.count == 24);
  CHECK_THROWS_AS(m->forward(at::zeros({1, 9}, at::kLong)), mtrain::Error);  // > block_size
}

TEST_CASE("gpt: attention is causal", "[model]") {
  ModelSpec s = tiny_gpt();
  s.dropout = 0.1;
  auto m = make_model(s, 5);
  m->eval();
  at::NoGradGuard no_grad;
  const at::Tensor x = at::randint(0, 32, {2, 8}, at::kLong);
  at::Tensor changed = x.clone();
  changed.select(1, 5).fill_(0);
  changed.select(1, 6).add_(1).remainder_(32);  // positions 5.. differ
  REQUIRE_FALSE(changed.equal(x));
  const at::Tensor a = m->forward(x), b = m->forward(changed);
  CHECK(at::allclose(a.slice(1, 0, 5), b.slice(1, 0, 5), 1e-6, 1e-6));  // earlier logits unchanged
  CHECK_FALSE(at::allclose(a.slice(1, 5, 8), b.slice(1, 5, 8), 1e-6, 1e-6));
  // eval mode disables dropout: repeated forwards agree.
  CHECK(m->forward(x).equal(a));
}

TEST_CASE("resnets: CIFAR layout, shapes, backward, BatchNorm buffers", "[model]") {
  for (const char* name : {"resnet18", "resnet50"}) {
    CAPTURE(name);
    ModelSpec s;
    s.name = mtrain::config::model_from_text(name);
    s.num_classes = 10;
    auto m = make_model(s, 2);
    auto params = m->named_parameters();
    CHECK(params["conv1.weight"].sizes() == at::IntArrayRef{64, 3, 3, 3});  // 3x3 stem
    const bool basic = std::string(name) == "resnet18";
    const auto prefixes = m->block_prefixes();
    CHECK(prefixes.size() == (basic ? 8u : 16u));
    CHECK(prefixes.front() == "layer1.0");
    CHECK(prefixes.back() == (basic ? "layer4.1" : "layer4.2"));
    CHECK(params.contains("layer2.0.downsample.0.weight"));
    CHECK(params["fc.weight"].sizes() == at::IntArrayRef{10, basic ? 512 : 2048});
    CHECK(params.contains(basic ? "layer1.1.conv2.weight" : "layer1.2.conv3.weight"));
    int64_t numel = 0;
    for (const auto& p : m->parameters()) numel += p.numel();
    // Reference counts of the CIFAR ResNets (no max-pool, 3x3 stem, 10 classes).
    CHECK(numel == (basic ? 11173962 : 23520842));
    CHECK(m->named_buffers().contains("bn1.running_mean"));
    // 16x16 inputs keep the test cheap; every stage still sees >= 2x2 pixels.
    const Batch b{at::randn({2, 3, 16, 16}), at::tensor(std::vector<int64_t>{1, 7})};
    CHECK(m->forward(b.input).sizes() == at::IntArrayRef{2, 10});
    const at::Tensor before = m->named_buffers()["bn1.running_mean"].clone();
    check_backward(*m, b);
    CHECK_FALSE(m->named_buffers()["bn1.running_mean"].equal(before));  // train mode updates
    const at::Tensor after = m->named_buffers()["bn1.running_mean"].clone();
    const EvalStats st = m->evaluate(b);
    CHECK(st.count == 2);
    CHECK(m->named_buffers()["bn1.running_mean"].equal(after));  // eval mode does not
    CHECK(m->is_training());                                     // mode restored
  }
}

TEST_CASE("models: same seed gives identical weights, another seed different", "[model]") {
  ModelSpec r18;
  r18.name = mtrain::config::ModelName::Resnet18;
  for (const ModelSpec& s : {tiny_mlp(), tiny_gpt(), r18}) {
    INFO(mtrain::config::to_string(s.name));
    auto a = make_model(s, 42), b = make_model(s, 42), c = make_model(s, 43);
    CHECK(same_weights(*a, *b));
    CHECK_FALSE(same_weights(*a, *c));
  }
  // make_model leaves the global generator alone (the loop seeds dropout from it).
  at::manual_seed(9);
  const at::Tensor expect = at::rand({4});
  at::manual_seed(9);
  make_model(tiny_gpt(), 1);
  CHECK(at::rand({4}).equal(expect));
}

TEST_CASE("mlp learns the synthetic task", "[model][data]") {
  ModelSpec m = tiny_mlp();
  m.input_dim = 16;
  m.hidden = 64;
  m.depth = 2;
  m.num_classes = 4;
  DataSpec d;
  d.name = mtrain::config::DataName::Synthetic;
  d.num_samples = 512;
  auto data = make_dataset(d, m, Split::Train, 0);
  auto val = make_dataset(d, m, Split::Val, 0);
  auto model = make_model(m, 0);
  std::vector<int64_t> all_val(static_cast<size_t>(val->size()));
  for (size_t i = 0; i < all_val.size(); ++i) all_val[i] = static_cast<int64_t>(i);
  const Batch vb = val->batch(all_val);
  const EvalStats before = model->evaluate(vb);
  const double lr = 0.5;
  for (int step = 0; step < 60; ++step) {
    std::vector<int64_t> idx;
    for (int j = 0; j < 32; ++j) idx.push_back((step * 32 + j) % data->size());
    model->zero_grad();
    model->loss(data->batch(idx)).backward();
    at::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.sub_(p.grad() * lr);
  }
  const EvalStats after = model->evaluate(vb);
  const double loss0 = before.loss_sum / static_cast<double>(before.count);
  const double loss1 = after.loss_sum / static_cast<double>(after.count);
  INFO("val loss " << loss0 << " -> " << loss1 << ", accuracy "
                   << static_cast<double>(after.correct) / static_cast<double>(after.count));
  CHECK(loss1 < 0.6 * loss0);
  CHECK(after.correct > vb.size() / 2);  // chance is 1/4
}

// Activation checkpointing of TorchScript models (lib/trainer/model/scripted_recompute.cpp): the
// selected blocks' call sites run through the checkpoint Function; gradients, buffers and the RNG
// stream equal the plain run, far fewer bytes stay allocated for backward, trained weights are
// identical under ddp and fsdp at world 1 and 2, and model.scripted.pt keeps plain calls.
#include <catch2/catch.hpp>

#include "data_files.hpp"
#include "helpers.hpp"
#include "model/recompute_pass.hpp"
#include "lib/core/error.hpp"
#include "lib/trainer/model/torchscript.hpp"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/serialization/import.h>
#include <torch/csrc/jit/serialization/pickle.h>

using namespace mtrain::trainer;
using namespace mtrain::trainer::testing;

namespace {

torch::jit::Module new_module(const std::shared_ptr<torch::jit::CompilationUnit>& cu,
                              const std::string& cls) {
  torch::jit::Module m(c10::QualifiedName("__torch__.mymodels." + cls), cu, /*shouldMangle=*/true);
  m.register_attribute("training", c10::BoolType::get(), true);
  return m;
}

torch::jit::Module linear(const std::shared_ptr<torch::jit::CompilationUnit>& cu, int64_t in,
                          int64_t out) {
  torch::jit::Module lin = new_module(cu, "Linear");
  lin.register_parameter("weight", (at::randn({out, in}) / std::sqrt(double(in))).requires_grad_(),
                         false);
  lin.register_parameter("bias", (at::randn({out}) * 0.1).requires_grad_(), false);
  lin.define("def forward(self, x):\n    return torch.linear(x, self.weight, self.bias)\n");
  return lin;
}

// Net: x [B, 8] → inp → blocks.0..2 (MLP block with dropout and a step-counting buffer) → head
// [B, 3]. blocks.1 is called inside an `if` (call sites in nested graph blocks are found too).
// dropout false: no dropout (thread ranks share one global generator, so their dropout masks
// depend on thread timing; separate rank processes do not share it).
std::string save_net(const fs::path& dir, int64_t d, bool dropout = true) {
  at::manual_seed(7);
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module net = new_module(cu, "Net");
  net.register_module("inp", linear(cu, 8, d));
  torch::jit::Module blocks = new_module(cu, "ModuleList");
  for (int i = 0; i < 3; ++i) {
    torch::jit::Module b = new_module(cu, "Block");
    b.register_module("fc1", linear(cu, d, 4 * d));
    b.register_module("fc2", linear(cu, 4 * d, d));
    b.register_buffer("seen", at::zeros({1}));
    b.define(std::string(R"(
def forward(self, x):
    if self.training:
        self.seen.add_(1.0)
    h = torch.relu(self.fc1.forward(x))
)") + (dropout ? "    h = torch.dropout(h, 0.1, self.training)\n" : "") +
             "    return x + self.fc2.forward(h)\n");
    blocks.register_module(std::to_string(i), b);
  }
  net.register_module("blocks", blocks);
  net.register_module("head", linear(cu, d, 3));
  net.define(R"(
def forward(self, x):
    x = self.inp.forward(x)
    x = getattr(self.blocks, "0").forward(x)
    if self.training:
        x = getattr(self.blocks, "1").forward(x)
    else:
        x = getattr(self.blocks, "1").forward(x)
    x = getattr(self.blocks, "2").forward(x)
    return self.head.forward(x)
)");
  const std::string path = (dir / "net.pt").string();
  net.save(path);
  return path;
}

// checkpointing false: the graphs run as saved (no call site rewritten).
ModelSpec spec_for(const std::string& path, const std::string& wrap, bool checkpointing = true) {
  ModelSpec s;
  s.name = mtrain::config::ModelName::Torchscript;
  s.path = path;
  s.loss = mtrain::config::LossName::CrossEntropy;
  s.wrap_module_types = wrap;
  s.activation_checkpointing = checkpointing;
  return s;
}


}  // namespace

TEST_CASE("torchscript activation checkpointing: same gradients, buffers and RNG, less kept",
          "[torchscript][recompute]") {
  at::set_num_threads(1);
  const fs::path dir = fresh_dir("ts_recompute");
  const std::string path = save_net(dir, 64);
  counting_allocator();  // installed before either model allocates
  at::manual_seed(3);
  Batch b{at::randn({64, 8}), at::randint(0, 3, {64}, at::kLong)};
  for (const std::string wrap : {"Block", "blocks.0,blocks.2"}) {
    INFO("wrap_module_types " << wrap);
    auto plain = make_model(spec_for(path, wrap, false), 0);
    auto ckpt = make_model(spec_for(path, wrap), 0);
    ckpt->set_activation_checkpointing(true);
    const Pass p = run(*plain, b);
    const Pass c = run(*ckpt, b);
    check_same_pass(p, c);
    CHECK(c.buffers[0].item<double>() == 1.0);  // the step counter counted once
    if (wrap == "Block") CHECK(c.kept_bytes < p.kept_bytes / 2);
    else CHECK(c.kept_bytes < p.kept_bytes);
    WARN("torchscript, wrap " << wrap << ": bytes kept for backward " << p.kept_bytes
                              << " plain vs " << c.kept_bytes << " checkpointed");
    // Evaluation and no-grad forwards are not recomputed and agree.
    const EvalStats e1 = plain->evaluate(b), e2 = ckpt->evaluate(b);
    CHECK(e1.loss_sum == e2.loss_sum);
  }
}

TEST_CASE("torchscript activation checkpointing: without selected blocks, one paragraph",
          "[torchscript][recompute]") {
  const fs::path dir = fresh_dir("ts_recompute");
  auto m = make_model(spec_for(save_net(dir, 8), ""), 0);
  m->set_activation_checkpointing(true);
  const std::string e = error_text([&] { m->loss({at::randn({2, 8}), at::zeros({2}, at::kLong)}); });
  CHECK_THAT(e, Catch::Contains("no submodule"));
  CHECK_THAT(e, Catch::Contains("fsdp.wrap_module_types"));
  // By size: the subtrees FSDP's size policy wraps (each Block here has 33088 parameters, its
  // Linears 16640 and 16448).
  ModelSpec s = spec_for(save_net(dir, 64), "");
  s.wrap_policy = mtrain::config::WrapPolicy::Size;
  s.min_num_params = 30000;
  auto by_size = make_model(s, 0);
  s.activation_checkpointing = false;
  auto plain = make_model(s, 0);
  by_size->set_activation_checkpointing(true);
  Batch b{at::randn({64, 8}), at::randint(0, 3, {64}, at::kLong)};
  const Pass p = run(*plain, b), c = run(*by_size, b);
  check_same_pass(p, c);
  CHECK(c.kept_bytes < p.kept_bytes);
}

TEST_CASE("torchscript activation checkpointing: model.scripted.pt has the plain calls",
          "[torchscript][recompute]") {
  const fs::path dir = fresh_dir("ts_recompute");
  auto m = make_model(spec_for(save_net(dir, 64), "Block"), 0);
  m->set_activation_checkpointing(true);
  Batch b{at::randn({64, 8}), at::randint(0, 3, {64}, at::kLong)};
  m->loss(b).backward();
  std::vector<std::pair<std::string, at::Tensor>> w;
  for (const auto& p : m->named_parameters()) w.emplace_back(p.key(), p.value().detach());
  std::stringstream buf;
  save_scripted_model(*m, w, buf);
  const std::string bytes = buf.str();
  CHECK(bytes.find("checkpoint_call") == std::string::npos);  // code is stored uncompressed
  torch::jit::Module back = torch::jit::load(buf);
  int calls = 0, ops = 0;
  for (const torch::jit::Node* n : back.get_method("forward").graph()->nodes()) {
    calls += n->kind().toQualString() == std::string("prim::CallMethod");
    ops += n->kind().toQualString() == std::string("mtrain::checkpoint_call");
  }
  CHECK(calls == 4);  // inp, blocks.0, blocks.2, head (blocks.1 sits inside the if)
  CHECK(ops == 0);
  {
    at::NoGradGuard g;
    back.eval();
    m->eval();
    CHECK(at::equal(back.forward({b.input}).toTensor(), m->forward(b.input)));
    m->train();
  }
  // The live model still checkpoints after saving: less kept, the same gradients.
  auto plain = make_model(spec_for(save_net(dir, 64), "Block", false), 0);
  for (const auto& [name, t] : m->named_parameters().pairs()) {
    at::NoGradGuard g;
    plain->named_parameters()[name].copy_(t);
  }
  const Pass p = run(*plain, b), c = run(*m, b);
  for (size_t i = 0; i < p.grads.size(); ++i) CHECK(at::equal(c.grads[i], p.grads[i]));
  CHECK(c.kept_bytes < p.kept_bytes);
}

TEST_CASE("torchscript activation checkpointing: same trained weights under ddp, fsdp, zero3",
          "[torchscript][recompute][job]") {
  at::set_num_threads(1);
  const fs::path dir = fresh_dir("ts_recompute_job");
  const std::string net = save_net(dir, 16, /*dropout=*/false);
  at::manual_seed(5);
  c10::impl::GenericDict d(c10::StringType::get(), c10::TensorType::get());
  d.insert("input", at::randn({256, 8}));
  d.insert("target", at::randint(0, 3, {256}, at::kLong));
  {
    const std::vector<char> bytes = torch::jit::pickle_save(d);
    std::ofstream out(dir / "data.pt", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  for (const std::string strategy : {"ddp", "fsdp", "zero3"}) {
    for (int world : {1, 2}) {
      std::map<std::string, at::Tensor> weights[2];
      for (int ck = 0; ck < 2; ++ck) {
        const fs::path work = dir / fmt::format("{}_{}_{}", strategy, world, ck);
        json j = small_job(work, "mlp");
        using mtrain::config::set;
        set(j, "model.name", "torchscript");
        set(j, "model.path", net);
        set(j, "model.loss", "cross_entropy");
        set(j, "data.name", "tensors");
        set(j, "data.path", (dir / "data.pt").string());
        set(j, "data.val_fraction", 0.0);
        set(j, "strategy", strategy);
        set(j, "fsdp.wrap_module_types", "Block");
        set(j, "fsdp.activation_checkpointing", ck == 1);
        set(j, "train.max_steps", 5);
        set(j, "checkpoint.interval", 0);
        run_job(j, world, nullptr, [ck](TrainerParts& p) {
          p.model->set_activation_checkpointing(ck == 1);
        });
        weights[ck] = load_dict(work / "model.pt");
      }
      INFO(strategy << " world " << world);
      REQUIRE(weights[0].size() == weights[1].size());
      REQUIRE(!weights[0].empty());
      for (const auto& [name, t] : weights[0]) {
        INFO(name);
        CHECK(at::equal(weights[1].at(name), t));
      }
    }
  }
}

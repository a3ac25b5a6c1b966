// The eval-mode trace beside a train-mode one (lib/trainer/model/trace_pair.cpp, issue 44 item 1):
// what check_trace_pair refuses and the paragraph it gives, bind_eval_trace sharing the tensors,
// and a TorchScript model with model.eval_path validating with the second file on the first's
// weights. Modules are defined in C++; the trace facts are given (test_traced_module.cpp tests
// how they are read).
#include "lib/trainer/model/trace_pair.hpp"

#include "lib/trainer/model/model.hpp"

#include <torch/csrc/jit/api/module.h>

#include <catch2/catch.hpp>

#include "error_text.hpp"
#include "temp_dir.hpp"

using namespace mtrain::trainer;
using mtrain::testing::error_text;

namespace {

// Net: fc (weight [3, 4], bias [3]) and a buffer `seen`; `scale` multiplies the logits so a test
// can tell which file ran.
torch::jit::Module net(double scale, int64_t out = 3, at::ScalarType dtype = at::kFloat, bool with_loss = false) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module m(c10::QualifiedName("__torch__.Net"), cu, /*shouldMangle=*/true);
  m.register_attribute("training", c10::BoolType::get(), true);
  torch::jit::Module fc(c10::QualifiedName("__torch__.Linear"), cu, /*shouldMangle=*/true);
  fc.register_attribute("training", c10::BoolType::get(), true);
  fc.register_parameter("weight", at::randn({out, 4}).to(dtype).requires_grad_(), false);
  fc.register_parameter("bias", at::zeros({out}).to(dtype).requires_grad_(), false);
  fc.define("def forward(self, x):\n    return torch.linear(x, self.weight, self.bias)\n");
  m.register_module("fc", fc);
  m.register_buffer("seen", at::zeros({1}));
  m.define("def forward(self, x):\n    return self.fc.forward(x) * " + std::to_string(scale) + "\n");
  if (with_loss)
    m.define("def loss(self, x, y):\n    return torch.nll_loss(torch.log_softmax(self.forward(x), 1), y)\n");
  return m;
}

TraceFacts frozen(std::vector<std::string> training, std::vector<std::string> eval) {
  TraceFacts f;
  f.traced = true;
  f.frozen_training = std::move(training);
  f.frozen_eval = std::move(eval);
  return f;
}

}  // namespace

TEST_CASE("trace pair: a lone trace with a frozen mode is refused with the way to make the pair", "[trace_pair]") {
  const auto m = net(1.0);
  CHECK(error_text([&] { check_trace_pair({"t.pt", m, frozen({}, {})}, nullptr); }).empty());
  const std::string e = error_text([&] { check_trace_pair({"t.pt", m, frozen({"aten::dropout"}, {})}, nullptr); });
  CHECK_THAT(e, Catch::Contains("'t.pt' was made by torch.jit.trace") &&
                    Catch::Contains("aten::dropout (training=true)") &&
                    Catch::Contains("model.eval_path (the eval-mode trace to validate with) is not set"));
  CHECK_THAT(e, Catch::Contains("torch.jit.trace(model.train(), example)") &&
                    Catch::Contains("torch.jit.trace(model.eval(), example)") &&
                    Catch::Contains("--set model.eval_path=eval.pt") && Catch::Contains("torch.jit.script"));
  // Traced in eval mode alone: it would never train its dropout.
  CHECK_THAT(error_text([&] {
               check_trace_pair({"t.pt", m, frozen({}, {"aten::batch_norm"})}, nullptr);
             }),
             Catch::Contains("this trace was made in eval mode"));
}

TEST_CASE("trace pair: each file in its own mode, and one module's tensors in both", "[trace_pair]") {
  const auto train = net(1.0);
  const auto eval = net(2.0);
  const ModelFile good{"e.pt", eval, frozen({}, {"aten::dropout"})};
  CHECK(error_text([&] { check_trace_pair({"t.pt", train, frozen({"aten::dropout"}, {})}, &good); }).empty());
  // A scripted pair (nothing frozen) is no harm either.
  const ModelFile plain{"e.pt", eval, TraceFacts{}};
  CHECK(error_text([&] { check_trace_pair({"t.pt", train, TraceFacts{}}, &plain); }).empty());

  const ModelFile swapped{"e.pt", eval, frozen({"aten::dropout"}, {})};
  const std::string s = error_text([&] { check_trace_pair({"t.pt", train, frozen({}, {"aten::dropout"})}, &swapped); });
  CHECK_THAT(s, Catch::Contains("model.path 't.pt' was traced in eval mode") && Catch::Contains("look swapped"));
  CHECK_THAT(error_text([&] {
               check_trace_pair({"t.pt", train, frozen({"aten::dropout"}, {})}, &swapped);
             }),
             Catch::Contains("model.eval_path 'e.pt' was traced in train mode (aten::dropout (training=true))"));

  const auto wide = net(1.0, 5);
  const ModelFile other{"e.pt", wide, TraceFacts{}};
  CHECK_THAT(error_text([&] {
               check_trace_pair({"t.pt", train, TraceFacts{}}, &other);
             }),
             Catch::Contains("model.eval_path 'e.pt' is not a trace of the module in model.path 't.pt': "
                             "'fc.weight' is float32 [3x4] in model.path and float32 [5x4] in model.eval_path"));
  const auto half = net(1.0, 3, at::kDouble);
  const ModelFile doubles{"e.pt", half, TraceFacts{}};
  CHECK_THAT(error_text([&] {
               check_trace_pair({"t.pt", train, TraceFacts{}}, &doubles);
             }),
             Catch::Contains("'fc.weight' is float32 [3x4] in model.path and float64 [3x4]"));
  auto extra = net(1.0);
  extra.register_parameter("temp", at::ones({1}).requires_grad_(), false);
  const ModelFile more{"e.pt", extra, TraceFacts{}};
  CHECK_THAT(error_text([&] {
               check_trace_pair({"t.pt", train, TraceFacts{}}, &more);
             }),
             Catch::Contains("'temp' (float32 [1]) is in model.eval_path only"));
  CHECK_THAT(error_text([&] {
               check_trace_pair({"e.pt", extra, TraceFacts{}}, &good);
             }),
             Catch::Contains("'temp' (float32 [1]) is in model.path only"));
  const auto with_loss = net(1.0, 3, at::kFloat, true);
  CHECK_THAT(error_text([&] {
               check_trace_pair({"t.pt", with_loss, TraceFacts{}}, &plain);
             }),
             Catch::Contains("model.path has a loss method and the other has none"));
}

TEST_CASE("trace pair: bound, the eval module computes with the train module's very tensors", "[trace_pair]") {
  const auto train = net(1.0);
  auto eval = net(2.0);
  bind_eval_trace(eval, train);
  for (const auto* name : {"fc.weight", "fc.bias", "seen"}) {
    const auto& t = std::string(name) == "seen"
                        ? train.attr("seen").toTensor()
                        : train.attr("fc").toModule().attr(std::string(name).substr(3)).toTensor();
    const auto& e = std::string(name) == "seen"
                        ? eval.attr("seen").toTensor()
                        : eval.attr("fc").toModule().attr(std::string(name).substr(3)).toTensor();
    CHECK(t.unsafeGetTensorImpl() == e.unsafeGetTensorImpl());
  }
  // A strategy's set_data (a shard's view, a device move) reaches both.
  at::NoGradGuard no_grad;
  train.attr("fc").toModule().attr("weight").toTensor().set_data(at::zeros({3, 4}));
  const at::Tensor x = at::randn({2, 4});
  CHECK(eval.forward({x}).toTensor().abs().max().item<double>() == 0.0);
}

TEST_CASE("trace pair: a TorchScript model validates with model.eval_path on the trained weights", "[trace_pair]") {
  mtrain::testing::TempDir dir;
  auto train = net(1.0);
  train.save((dir.path / "train.pt").string());
  net(2.0).save((dir.path / "eval.pt").string());  // other initial values: the train file's are used
  ModelSpec s;
  s.name = mtrain::config::ModelName::Torchscript;
  s.path = (dir.path / "train.pt").string();
  s.eval_path = (dir.path / "eval.pt").string();
  s.loss = mtrain::config::LossName::CrossEntropy;
  auto model = make_model(s, 0);
  {
    at::NoGradGuard no_grad;  // as an optimizer's step does, in place
    for (auto& p : model->parameters()) p.add_(0.25);
  }
  const Batch b{at::randn({6, 4}), at::randint(0, 3, {6}, at::kLong)};
  const at::Tensor w = model->named_parameters()["fc.weight"];
  const at::Tensor bias = model->named_parameters()["fc.bias"];
  at::NoGradGuard no_grad;
  const at::Tensor logits = at::linear(b.input, w, bias);
  const EvalStats st = model->evaluate(b);
  const double want = at::cross_entropy_loss(logits * 2.0, b.target).item<double>();
  CHECK(st.loss_sum / static_cast<double>(st.count) == Approx(want).epsilon(1e-6));
  CHECK(model->loss(b).item<double>() == Approx(at::cross_entropy_loss(logits, b.target).item<double>()).epsilon(1e-6));
  // One set of weights: the model's parameters are the train file's names only.
  CHECK(model->named_parameters().size() == 2);

  s.eval_path = (dir.path / "nope.pt").string();
  CHECK_THAT(error_text([&] { make_model(s, 0); }),
             Catch::Contains("'" + s.eval_path + "' does not exist") && Catch::Contains("check model.eval_path"));
  net(1.0, 5).save((dir.path / "other.pt").string());
  s.eval_path = (dir.path / "other.pt").string();
  CHECK_THAT(error_text([&] { make_model(s, 0); }), Catch::Contains("is not a trace of the module in model.path"));
}

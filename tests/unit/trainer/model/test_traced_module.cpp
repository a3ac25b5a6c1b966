// trace_facts (lib/trainer/model/traced_module.cpp): which operators a trace froze in which mode.
// The modules are defined in C++; one whose source carries the tracer's call-stack marker
// ("torch/jit/_trace.py(…)", which torch.jit.save keeps as a traced node's origin) and has been
// saved and loaded reads as a trace, as a Python trace does (the e2e tests in tests/e2e/models/
// trace real modules).
#include "lib/trainer/model/traced_module.hpp"

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <catch2/catch.hpp>

#include "temp_dir.hpp"

using namespace mtrain::trainer;

namespace {

torch::jit::Module saved_and_loaded(const std::string& forward, const std::string& path) {
  auto cu = std::make_shared<torch::jit::CompilationUnit>();
  torch::jit::Module m(c10::QualifiedName("__torch__.Net"), cu, /*shouldMangle=*/true);
  m.register_attribute("training", c10::BoolType::get(), true);
  m.register_parameter("w", at::ones({3}).requires_grad_(), false);
  m.define(forward);
  m.save(path);
  return torch::jit::load(path);
}

const char* const kTracerMark = "    # torch/jit/_trace.py(1000): trace_module\n";

}  // namespace

TEST_CASE("traced module: the modes a trace froze, by mode, p = 0 dropout and scripts are free", "[traced]") {
  mtrain::testing::TempDir dir;
  const std::string p = (dir.path / "m.pt").string();
  const std::string head = "def forward(self, x):\n";
  const std::string body =
      "    y = torch.dropout(x * self.w, 0.5, True)\n"
      "    y = torch.dropout(y, 0.5, True)\n"
      "    y = torch.feature_dropout(y, 0.5, False)\n"
      "    return torch.dropout(y, 0.0, True)\n";
  const TraceFacts traced = trace_facts(saved_and_loaded(head + kTracerMark + body, p));
  CHECK(traced.traced);
  CHECK(traced.frozen_training == std::vector<std::string>{"aten::dropout", "aten::dropout"});
  CHECK(traced.frozen_eval == std::vector<std::string>{"aten::feature_dropout"});
  CHECK(traced.any_frozen());
  CHECK(traced.describe_frozen() == "aten::dropout (training=true) x2, aten::feature_dropout (training=false)");
  // The same code scripted: its constants are the author's choice, nothing is frozen.
  const TraceFacts scripted = trace_facts(saved_and_loaded(head + body, p));
  CHECK_FALSE(scripted.traced);
  CHECK_FALSE(scripted.any_frozen());
  // A trace whose only dropout has p = 0: the identity in both modes.
  const TraceFacts p0 =
      trace_facts(saved_and_loaded(head + kTracerMark + "    return torch.dropout(x * self.w, 0.0, True)\n", p));
  CHECK(p0.traced);
  CHECK_FALSE(p0.any_frozen());
}

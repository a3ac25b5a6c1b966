// The TorchScript trust check over LibTorch's own parser (lib/trainer/model/torchscript_code_check.cpp;
// issue 40 items 1 and 3): every spelling that defeated the old text scan is a finding now.
#include <catch2/catch.hpp>

#include "error_text.hpp"
#include "lib/core/torchscript_trust.hpp"
#include "lib/trainer/model/torchscript_code_check.hpp"

using namespace mtrain;
using namespace mtrain::trainer;
using mtrain::testing::error_text;

namespace {

CodeCheck check(const std::string& code, const std::string& name = "code/__torch__.py") {
  return check_torchscript_code({{name, code}});
}

// A module whose forward runs `body` (indented by the caller's 4 spaces).
std::string module_with(const std::string& body) {
  return "class M(Module):\n"
         "  __parameters__ = [\"w\", ]\n"
         "  __buffers__ = []\n"
         "  w : Tensor\n"
         "  training : bool\n"
         "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n" +
         body + "    return torch.linear(x, self.w)\n";
}

bool reaches(const CodeCheck& c, const std::string& needle) {
  for (const auto& f : c.findings)
    if (f.what.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("code check: a model's own computation passes", "[torchscript_code_check]") {
  const auto c = check(
      "op_version_set = 8\n"
      "import torch\n"
      "class M(Module):\n"
      "  __parameters__ = [\"w\", \"b\", ]\n"
      "  w : Tensor\n"
      "  b : Tensor\n"
      "  training : bool\n"
      "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
      "    y = torch.linear(x, self.w, self.b)\n"
      "    _0 = ops.prim.dtype(y)\n"
      "    z = torch.softmax(y, -1, None)\n"
      "    n = torch.size(z, 0)\n"
      "    s = x.sum() * 2 + len([1, 2]) + n\n"
      "    q = torch.autograd.grad\n"
      "    return torch.add(z, y.float(), alpha=1)\n"
      "  def loss(self: __torch__.M, x: Tensor, t: Tensor) -> Tensor:\n"
      "    return torch.cross_entropy_loss(self.forward(x), t, None, 1, -100, 0.)\n"
      "  def __setstate__(self: __torch__.M, state: Tuple[Tensor, Tensor, bool]) -> NoneType:\n"
      "    self.training = (state)[2]\n"
      "    _1 = torch.copy_(self.w, (state)[0])\n"
      "    _2 = (self.b).copy_((state)[1])\n"
      "    return None\n");
  for (const auto& f : c.findings) UNSCOPED_INFO(f.what << " at " << f.where);
  CHECK(c.findings.empty());
  CHECK(c.unknown.empty());
  REQUIRE(c.operators.size() >= 4);
  CHECK(c.operators[0].name == "aten::linear");
  CHECK(c.operators[0].where == "code/__torch__.py:9");
}

TEST_CASE("code check: every spelling of a file operator is found", "[torchscript_code_check]") {
  const std::vector<std::pair<std::string, std::string>> spellings = {
      {"a space before the parenthesis", "    t = torch.from_file (\"/tmp/p\", True, 4)\n"},
      {"spaces around the dot", "    t = torch . from_file(\"/tmp/p\", True, 4)\n"},
      {"a line break inside the call", "    t = torch.from_file(\n      \"/tmp/p\",\n      True, 4)\n"},
      {"ops.aten with a space", "    t = ops.aten.from_file (\"/tmp/p\", True, 4)\n"},
      {"torch.autograd as aten", "    t = torch.autograd.from_file(\"/tmp/p\", True, 4)\n"},
      {"save with a space", "    _0 = torch.save (x, \"/tmp/p\")\n"},
      {"after a triple-quoted string", "    _s = \"\"\"a \" b\"\"\"\n    t = torch.from_file(\"/tmp/p\", True, 4)\n"},
      {"an alias called later", "    f = torch.from_file\n    t = f(\"/tmp/p\", True, 4)\n"},
      {"a string with a # before it", "    _s = \"# not a comment\"\n    t = torch.from_file(\"/tmp/p\", True, 4)\n"},
  };
  for (const auto& [what, body] : spellings) {
    INFO(what);
    const auto c = check(module_with(body));
    CHECK((reaches(c, "aten::from_file") || reaches(c, "aten::save")));
  }
}

TEST_CASE("code check: namespaces as values, other libraries and custom classes are findings", "[torchscript_code_check]") {
  CHECK(reaches(check(module_with("    f = getattr(torch, \"from_file\")\n")), "operator namespace torch as a value"));
  CHECK(reaches(check(module_with("    t = torch\n")), "operator namespace torch"));
  CHECK(reaches(check(module_with("    _0 = ops.mylib.launch(x)\n")), "'mylib' library"));
  CHECK(reaches(check(module_with("    o = ops.c10d\n")), "operator namespace ops.c10d"));
  CHECK(reaches(check(module_with("    p = __torch__.torch.classes.foo.Bar(1)\n")), "custom C++ class"));
  CHECK(reaches(check(module_with("    _0 = (x).mystery_method()\n")), "neither a PyTorch operator"));
  // A method the archive defines is the archive's code, checked where it is defined.
  CHECK(check(module_with("    _0 = (self).helper(x)\n") + "  def helper(self: __torch__.M, x: Tensor) -> Tensor:\n    return x\n")
            .findings.empty());
}

TEST_CASE("code check: a __setstate__ may only restore state", "[torchscript_code_check]") {
  auto setstate = [](const std::string& head, const std::string& body) {
    return "class M(Module):\n"
           "  w : Tensor\n"
           "  training : bool\n"
           "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n"
           "    return x\n"
           "  def work(self: __torch__.M) -> None:\n"
           "    return None\n" +
           head + "\n" + body + "    return None\n";
  };
  const std::string def = "  def __setstate__(self: __torch__.M, state: Tuple[Tensor, bool]) -> NoneType:";
  CHECK(reaches(check(setstate(def, "    print(\"hello\")\n")), "that calls print()"));
  CHECK(reaches(check(setstate(def, "    _0 = (self).work()\n")), "calls the method work()"));
  CHECK(reaches(check(setstate(def, "    self.training = torch.numel((state)[0]) < 4\n")), "uses the operator '<'"));
  CHECK(reaches(check(setstate(def, "    self.training = torch.gt(torch.numel((state)[0]), 0)\n")), "aten::gt"));
  const std::string spaced = "  def __setstate__ (self: __torch__.M, state: Tuple[Tensor, bool]) -> NoneType:";
  CHECK(reaches(check(setstate(spaced, "    print(\"hello\")\n")), "__setstate__"));
  CHECK(check(setstate(def, "    self.training = (state)[1]\n    _0 = torch.copy_(self.w, (state)[0])\n")).findings.empty());
}

TEST_CASE("code check: unparsable or too deeply nested code is refused, not crashed on", "[torchscript_code_check]") {
  CHECK_THAT(error_text([] { check("def f(x):\n  return (\n"); }), Catch::Contains("does not parse as TorchScript"));
  CHECK_THAT(error_text([] { check("x = 1\n"); }), Catch::Contains("expects a class or a def"));
  const std::string deep = "def f(x: int) -> int:\n  return " + std::string(100000, '(') + "x" + std::string(100000, ')') + "\n";
  CHECK_THAT(error_text([&] { check(deep); }), Catch::Contains("nests deeper than the trust check reads"));
  std::string minus = "def f(x: int) -> int:\n  return ";
  for (int i = 0; i < 20000; ++i) minus += "- ";
  CHECK_NOTHROW(check(minus + "x\n"));  // deep, within the bounds: the check's own stack holds it
}

TEST_CASE("code check: the refusal names the finding and the way out", "[torchscript_code_check]") {
  const auto c = check(module_with("    t = torch.from_file (\"/tmp/p\", True, 4)\n"));
  const std::string p = error_text([&] { check_torchscript_trust("evil.pt", c.findings, false); });
  CHECK_THAT(p, Catch::Contains("error: model.trust_code: the TorchScript model 'evil.pt' is a program") &&
                    Catch::Contains("aten::from_file") && Catch::Contains("code/__torch__.py:7") &&
                    Catch::Contains("nothing of it was run") && Catch::Contains("--set model.trust_code=true"));
  CHECK_NOTHROW(check_torchscript_trust("evil.pt", c.findings, true));
  CHECK(allowlisted_operator("aten::linear"));
  CHECK_FALSE(allowlisted_operator("aten::from_file"));
  CHECK_FALSE(allowlisted_operator("aten::save"));
}

#include <catch2/catch.hpp>

#include "error_text.hpp"
#include "mtrain/core/torchscript_archive.hpp"
#include "mtrain/core/torchscript_trust.hpp"

using namespace mtrain;
using mtrain::testing::error_text;

namespace {
TorchScriptArchive archive_of(const std::string& code) {
  TorchScriptArchive a;
  a.prefix = "m";
  a.operators = operators_in_code(code, "code/__torch__.py");
  a.setstates = setstate_methods(code, "code/__torch__.py");
  return a;
}
}  // namespace

TEST_CASE("trust: a model's own computation passes", "[torchscript_trust]") {
  const auto a = archive_of(
      "class M(Module):\n"
      "  def forward(s: __torch__.M, x: Tensor) -> Tensor:\n"
      "    y = torch.linear(x, s.w, s.b)\n"
      "    return torch.softmax(y, -1)\n"
      "  def __setstate__(s: __torch__.M,\n"
      "    state: Tuple[Tensor, bool]) -> NoneType:\n"
      "    s.training = (state)[1]\n"
      "    _0 = torch.copy_(s.w, (state)[0])\n"
      "    return None\n");
  CHECK(untrusted_code(a).empty());
  CHECK(a.setstates.size() == 1);
  CHECK(a.setstates[0].where == "code/__torch__.py:5");
}

TEST_CASE("trust: file operators, foreign libraries and a busy __setstate__ are findings", "[torchscript_trust]") {
  const auto a = archive_of(
      "class M(Module):\n"
      "  def forward(s: __torch__.M, x: Tensor) -> Tensor:\n"
      "    _0 = ops.mylib.launch(x)\n"
      "    return torch.linear(x, s.w, s.b)\n"
      "  def __setstate__(s: __torch__.M,\n"
      "    state: Tuple[Tensor, bool]) -> NoneType:\n"
      "    t = torch.from_file(\"/tmp/x\", True, 4)\n"
      "    s.training = torch.gt(torch.numel(t), 0)\n"
      "    return None\n"
      "  def helper(s: __torch__.M) -> None:\n"
      "    torch.save(s.w, \"/tmp/y\")\n");
  const auto f = untrusted_code(a);
  REQUIRE(f.size() == 4);
  CHECK_THAT(f[0].what, Catch::Contains("'mylib' library (mylib::launch)"));
  CHECK(f[0].where == "code/__torch__.py:3");
  CHECK(f[1].what == "reads or writes files: aten::from_file");
  CHECK(f[1].where == "code/__torch__.py:7");
  CHECK(f[2].what == "reads or writes files: aten::save");
  CHECK_THAT(f[3].what, Catch::Contains("__setstate__ (code/__torch__.py:5) that calls aten::from_file"));
  CHECK(f[3].where == "code/__torch__.py:7");
  const std::string p = error_text([&] { check_torchscript_trust("evil.pt", a, false); });
  CHECK_THAT(p, Catch::Contains("error: model.trust_code: the TorchScript model 'evil.pt' is a program") &&
                    Catch::Contains("nothing of it was run") && Catch::Contains("--set model.trust_code=true"));
  CHECK(error_text([&] { check_torchscript_trust("evil.pt", a, true); }).empty());
}

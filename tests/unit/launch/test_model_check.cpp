#include <catch2/catch.hpp>

#include "mtrain/launch/model_check.hpp"

using namespace mtrain;

namespace {
WorkerFacts debian_113() {
  WorkerFacts f;
  f.libtorch = "1.13.1";
  f.file_format_max = 10;
  f.torch_line = "system";
  f.source_dir = "/src/mtrain";
  return f;
}
TorchScriptArchive scripted_by_2x(std::vector<OperatorUse> ops) {
  TorchScriptArchive a;
  a.prefix = "vit";
  a.format_version = 3;
  a.has_byteorder = true;
  a.operators = std::move(ops);
  return a;
}
}  // namespace

TEST_CASE("model check: an operator the worker lacks is refused with versions and the build command", "[model_check]") {
  const auto a = scripted_by_2x({{"aten::linear", "code/__torch__.py:3"},
                                 {"aten::scaled_dot_product_attention", "code/__torch__/torch/nn/functional.py:120"},
                                 {"aten::_native_multi_head_attention", "code/__torch__/torch/nn/functional.py:300"}});
  const auto e = launch::torchscript_incompatibility("vit.pt", a, debian_113(), {"aten::linear", "prim::device"});
  REQUIRE(e.has_value());
  CHECK(e->exit_code() == kExitUsage);
  const std::string p = e->paragraph();
  CHECK_THAT(p, Catch::Contains("model.path") && Catch::Contains("'vit.pt'") && Catch::Contains("PyTorch 2.x") &&
                    Catch::Contains("aten::scaled_dot_product_attention (code/__torch__/torch/nn/functional.py:120)") &&
                    Catch::Contains("LibTorch 1.13.1 (CPU)") && Catch::Contains("2 unknown operators") &&
                    Catch::Contains("aten::_native_multi_head_attention") &&
                    Catch::Contains("MTRAIN_PYTHON=$(command -v python3) /src/mtrain/scripts/bootstrap --torch python"));
  CHECK(p.find('\n') == std::string::npos);  // one paragraph
}

TEST_CASE("model check: a model whose operators all exist passes", "[model_check]") {
  const auto a = scripted_by_2x({{"aten::linear", "x:1"}, {"prim::device", "x:2"}});
  CHECK_FALSE(launch::torchscript_incompatibility("m.pt", a, debian_113(), {"aten::linear", "prim::device"}));
  // No operator list (facts of an older build): only the file format is checked.
  CHECK_FALSE(launch::torchscript_incompatibility("m.pt", a, debian_113(), {}));
}

TEST_CASE("model check: a file format newer than the worker reads is refused", "[model_check]") {
  auto a = scripted_by_2x({});
  a.format_version = 11;
  const auto e = launch::torchscript_incompatibility("m.pt", a, debian_113(), {});
  REQUIRE(e.has_value());
  CHECK_THAT(e->paragraph(), Catch::Contains("file format 11 is newer than the 10"));
}

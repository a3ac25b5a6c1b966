#include <catch2/catch.hpp>

#include "lib/launch/model_check.hpp"

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
TorchScriptArchive scripted_by_2x() {
  TorchScriptArchive a;
  a.prefix = "vit";
  a.format_version = 3;
  a.has_byteorder = true;
  return a;
}
}  // namespace

TEST_CASE("model check: an operator the worker lacks is refused with versions and the build command", "[model_check]") {
  // As the 1.13 worker's model-check answers for a ViT scripted by 2.x: the operators it lacks.
  const auto e = launch::torchscript_incompatibility(
      "vit.pt", scripted_by_2x(), debian_113(),
      {{"aten::scaled_dot_product_attention", "code/__torch__/torch/nn/functional.py:120"},
       {"aten::_native_multi_head_attention", "code/__torch__/torch/nn/functional.py:300"}});
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
  CHECK_FALSE(launch::torchscript_incompatibility("m.pt", scripted_by_2x(), debian_113(), {}));
}

TEST_CASE("model check: a file format newer than the worker reads is refused", "[model_check]") {
  auto a = scripted_by_2x();
  a.format_version = 11;
  const auto e = launch::torchscript_incompatibility("m.pt", a, debian_113(), {});
  REQUIRE(e.has_value());
  CHECK_THAT(e->paragraph(), Catch::Contains("file format 11 is newer than the 10"));
}

TEST_CASE("model check: the worker's answer is parsed, and anything else is named", "[model_check]") {
  const auto w = launch::parse_worker_model_check(
      "w", R"({"saved_by":"x","format_version":3,"operators":[],"unknown":[{"name":"aten::a","where":"c:1"}],)"
           R"("findings":[{"what":"calls aten::save","where":"code/__torch__.py:4"}]})");
  REQUIRE(w.unknown.size() == 1);
  CHECK(w.unknown[0].name == "aten::a");
  REQUIRE(w.findings.size() == 1);
  CHECK(w.findings[0].where == "code/__torch__.py:4");
  CHECK(w.classes.empty());  // a worker older than the list (issue 45) sends none
  CHECK(w.eval_unknown.empty());  // no --eval: no "eval" object
  const auto e = launch::parse_worker_model_check(
      "w", R"({"operators":[],"unknown":[],"findings":[],"classes":[],"eval":{"saved_by":"x","format_version":3,)"
           R"("operators":[],"unknown":[{"name":"aten::b","where":"c:2"}],"findings":[{"what":"w","where":"v"}]}})");
  CHECK(e.unknown.empty());
  REQUIRE(e.eval_unknown.size() == 1);
  CHECK(e.eval_unknown[0].name == "aten::b");
  REQUIRE(e.eval_findings.size() == 1);
  CHECK(e.eval_findings[0].where == "v");
  const auto c = launch::parse_worker_model_check(
      "w",
      R"({"operators":[],"unknown":[],"findings":[],"classes":[{"name":"Block","count":2},{"name":"Linear","count":1}]})");
  REQUIRE(c.classes.size() == 2);
  CHECK(c.classes[0] == std::make_pair(std::string("Block"), 2));
  CHECK(c.classes[1].first == "Linear");
  try {
    launch::parse_worker_model_check("/opt/w", "Segmentation fault\x1b[2J");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.exit_code() == kExitFailure);
    CHECK_THAT(e.paragraph(), Catch::Contains("/opt/w model-check") && Catch::Contains("^[[2J"));
  }
}

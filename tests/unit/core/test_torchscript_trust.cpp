// The refusal both sides of the trust check share (lib/core/torchscript_trust.cpp); what is a
// finding is decided by LibTorch's parser (tests/unit/trainer/model/test_torchscript_code_check.cpp).
#include <catch2/catch.hpp>

#include "error_text.hpp"
#include "lib/core/torchscript_trust.hpp"

using namespace mtrain;
using mtrain::testing::error_text;

TEST_CASE("trust: no findings, or trusted, is no refusal", "[torchscript_trust]") {
  CHECK_NOTHROW(check_torchscript_trust("m.pt", {}, false));
  CHECK_NOTHROW(check_torchscript_trust("m.pt", {{"calls aten::save", "code/__torch__.py:3"}}, true));
}

TEST_CASE("trust: the refusal names the first findings, escapes them and says the way out", "[torchscript_trust]") {
  std::vector<TrustFinding> f;
  for (int i = 0; i < 6; ++i) f.push_back({"calls aten::save\x1b]0;x\x07", "code/__torch__.py:" + std::to_string(i + 1)});
  const std::string p = error_text([&] { check_torchscript_trust("evil.pt", f, false); });
  CHECK_THAT(p, Catch::Contains("error: model.trust_code: the TorchScript model 'evil.pt' is a program") &&
                    Catch::Contains("(at code/__torch__.py:1)") && Catch::Contains("code/__torch__.py:4") &&
                    Catch::Contains("(6 findings in all)") && Catch::Contains("nothing of it was run") &&
                    Catch::Contains("--set model.trust_code=true"));
  CHECK(p.find('\x1b') == std::string::npos);
  CHECK_THAT(p, Catch::Contains("^[]0;x^G"));
}

// YAML with limits (lib/core/yaml_input.cpp): the size before parsing, then depth and the number
// of values after alias expansion, each refusal naming the file; syntax errors stay yaml-cpp's.
#include <catch2/catch.hpp>

#include <string>

#include "mtrain/core/error.hpp"
#include "mtrain/core/input_limits.hpp"
#include "mtrain/core/yaml_input.hpp"

using mtrain::InputLimits;
using mtrain::load_yaml_limited;

TEST_CASE("yaml_input: within the limits it is YAML::Load", "[core][yaml_input]") {
  const auto n = load_yaml_limited("a: [1, 2, {b: x}]\nc: &v 3\nd: *v\n", "job.yaml");
  CHECK(n["a"][2]["b"].as<std::string>() == "x");
  CHECK(n["d"].as<int>() == 3);
  CHECK(load_yaml_limited("", "empty.yaml").IsNull());
  CHECK_THROWS_AS(load_yaml_limited("a: [1, 2", "bad.yaml"), YAML::ParserException);
}

TEST_CASE("yaml_input: too large, too deep, too many values", "[core][yaml_input]") {
  InputLimits lim;
  lim.max_bytes = 16;
  CHECK_THROWS_WITH(load_yaml_limited("key: a value that is long", "big.yaml", lim),
                    Catch::Contains("big.yaml") && Catch::Contains("larger than"));
  CHECK_NOTHROW(load_yaml_limited("key: 0123456789", "ok.yaml", lim));  // 15 bytes

  lim = InputLimits{};
  lim.max_depth = 3;
  CHECK_NOTHROW(load_yaml_limited("[[[1]]]", "ok.yaml", lim));  // root at 0, the scalar at 3
  CHECK_THROWS_WITH(load_yaml_limited("[[[[1]]]]", "deep.yaml", lim),
                    Catch::Contains("deep.yaml") && Catch::Contains("nested more than 3 levels"));

  lim = InputLimits{};
  lim.max_nodes = 5;
  CHECK_NOTHROW(load_yaml_limited("[1, 2, 3, 4]", "ok.yaml", lim));  // the list and four values
  CHECK_THROWS_WITH(load_yaml_limited("[1, 2, 3, 4, 5]", "many.yaml", lim), Catch::Contains("many.yaml"));
}

TEST_CASE("yaml_input: aliases count once per use, and the refusal says so", "[core][yaml_input]") {
  // Three levels of three aliases: 1 + 3 + 9 + 27 values once expanded, from a few dozen bytes.
  const std::string text = "a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n";
  InputLimits lim;
  lim.max_nodes = 30;
  try {
    load_yaml_limited(text, "bomb.yaml", lim);
    FAIL("no refusal");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.paragraph(), Catch::Contains("bomb.yaml") && Catch::Contains("alias"));
  }
  lim.max_nodes = 100;
  CHECK_NOTHROW(load_yaml_limited(text, "bomb.yaml", lim));
}

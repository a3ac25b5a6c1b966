// The one YAML document loader (lib/core/yaml_input.cpp): the size and UTF-8 before parsing, syntax
// errors at file:line:column, then depth and the number of values after alias expansion, each
// refusal naming the file.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/yaml_input.hpp"

using mtrain::InputLimits;
using mtrain::load_yaml_document;
using mtrain::read_yaml_document;

TEST_CASE("yaml_input: within the limits it is YAML::Load", "[core][yaml_input]") {
  const auto n = load_yaml_document("a: [1, 2, {b: x}]\nc: &v 3\nd: *v\n", "job.yaml");
  CHECK(n["a"][2]["b"].as<std::string>() == "x");
  CHECK(n["d"].as<int>() == 3);
  CHECK(load_yaml_document("", "empty.yaml").IsNull());
}

TEST_CASE("yaml_input: a malformed document is refused at file:line:column", "[core][yaml_input]") {
  // The flow list opened on line 2 is never closed: yaml-cpp stops where a mapping key appears
  // inside it, the ':' of "lr:" at line 3, column 5.
  const std::string text = "strategy: zero2\ntrain: {max_steps: [1, 2\n  lr: 3\n";
  const auto d = read_yaml_document(text, "job.yaml");
  REQUIRE(d.problem);
  CHECK(d.problem->line == 3);
  CHECK(d.problem->column == 5);
  CHECK_THAT(d.problem->message, Catch::StartsWith("not valid YAML: "));
  CHECK_FALSE(d.problem->hint.empty());
  try {
    load_yaml_document(text, "job.yaml");
    FAIL("accepted a malformed document");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::StartsWith("job.yaml:3:5: not valid YAML: "));
    CHECK(e.exit_code() == mtrain::kExitUsage);
  }
  // A mapping value where a plain one was open: the error points into line 2.
  const auto colon = read_yaml_document("a: b\nc: d: e\n", "x.yaml");
  REQUIRE(colon.problem);
  CHECK(colon.problem->line == 2);
  // Bytes that are not UTF-8: the line and column of the first bad byte.
  const auto latin1 = read_yaml_document("a: 1\nb: caf\xe9\n", "l1.yaml");
  REQUIRE(latin1.problem);
  CHECK(latin1.problem->line == 2);
  CHECK(latin1.problem->column == 7);
  CHECK(latin1.problem->message == "not valid UTF-8 (byte 0xe9)");
  CHECK_THROWS_WITH(load_yaml_document("a: 1\nb: caf\xe9\n", "l1.yaml"), Catch::Contains("l1.yaml:2:7: not valid UTF-8"));
}

TEST_CASE("yaml_input: too large, too deep, too many values", "[core][yaml_input]") {
  InputLimits lim;
  lim.max_bytes = 16;
  CHECK_THROWS_WITH(load_yaml_document("key: a value that is long", "big.yaml", lim),
                    Catch::Contains("big.yaml") && Catch::Contains("larger than"));
  // Limits concern the whole file: no position, and the problem names no file of its own.
  const auto big = read_yaml_document("key: a value that is long", "big.yaml", lim);
  REQUIRE(big.problem);
  CHECK(big.problem->line == 0);
  CHECK_THAT(big.problem->message, !Catch::Contains("big.yaml"));
  CHECK_NOTHROW(load_yaml_document("key: 0123456789", "ok.yaml", lim));  // 15 bytes

  lim = InputLimits{};
  lim.max_depth = 3;
  CHECK_NOTHROW(load_yaml_document("[[[1]]]", "ok.yaml", lim));  // root at 0, the scalar at 3
  CHECK_THROWS_WITH(load_yaml_document("[[[[1]]]]", "deep.yaml", lim),
                    Catch::Contains("deep.yaml") && Catch::Contains("nested more than 3 levels"));

  lim = InputLimits{};
  lim.max_nodes = 5;
  CHECK_NOTHROW(load_yaml_document("[1, 2, 3, 4]", "ok.yaml", lim));  // the list and four values
  CHECK_THROWS_WITH(load_yaml_document("[1, 2, 3, 4, 5]", "many.yaml", lim), Catch::Contains("many.yaml"));
}

TEST_CASE("yaml_input: aliases count once per use, and the refusal says so", "[core][yaml_input]") {
  // Three levels of three aliases: 1 + 3 + 9 + 27 values once expanded, from a few dozen bytes.
  const std::string text = "a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n";
  InputLimits lim;
  lim.max_nodes = 30;
  try {
    load_yaml_document(text, "bomb.yaml", lim);
    FAIL("no refusal");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.paragraph(), Catch::Contains("bomb.yaml") && Catch::Contains("alias"));
  }
  lim.max_nodes = 100;
  CHECK_NOTHROW(load_yaml_document(text, "bomb.yaml", lim));
}

namespace {

// Peak resident memory (MiB) of a child that runs read_yaml_document over `text`; the child exits
// 0 when the document was refused with a message containing `expect`.
long child_peak_mib(const std::string& text, const std::string& expect, int* status) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const auto d = read_yaml_document(text, "bomb.yaml");
    ::_exit(d.problem && d.problem->message.find(expect) != std::string::npos ? 0 : 1);
  }
  rusage u{};
  ::wait4(pid, status, 0, &u);
  return u.ru_maxrss / 1024;
}

}  // namespace

// Issue 40 item 8: the tree was built whole before the limits were checked: 16 MiB of `[` peaked
// at 3.9 GB and was then refused as "bad file" (yaml-cpp's own recursion guard).
TEST_CASE("yaml_input: nesting and values are bounded while parsing, in bounded memory", "[core][yaml_input]") {
  const std::string brackets(16u << 20, '[');
  const auto d = read_yaml_document("a: 1\nb: " + brackets.substr(0, 100), "deep.yaml");
  REQUIRE(d.problem);
  CHECK(d.problem->line == 2);
  CHECK(d.problem->column == 4 + 64);  // the 65th `[`
  CHECK_THAT(d.problem->message, Catch::Contains("nested more than 64 levels"));
  CHECK_THROWS_WITH(load_yaml_document(brackets, "deep.yaml"),
                    Catch::Contains("deep.yaml:1:65: values are nested more than 64 levels deep"));
  int status = 0;
  CHECK(child_peak_mib(brackets, "nested more than 64 levels", &status) < 200);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  // Block nesting, which has no brackets: refused from the parser's events.
  std::string block;
  for (int i = 0; i < 100; ++i) block += std::string(static_cast<size_t>(i), ' ') + "k:\n";
  const auto b = read_yaml_document(block, "block.yaml");
  REQUIRE(b.problem);
  CHECK(b.problem->line == 65);
  CHECK_THAT(b.problem->message, Catch::Contains("nested more than 64 levels"));
  // 4 million one-line values (16 MiB): refused by the count before a tree of them is built.
  std::string lines;
  lines.reserve(16u << 20);
  while (lines.size() + 4 <= (16u << 20)) lines += "- a\n";
  CHECK(child_peak_mib(lines, "more than 100000 values", &status) < 200);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  // A flat flow list the scanner must queue whole (it could be a mapping key): stopped when it has
  // read far past the last value.
  std::string flat = "[";
  while (flat.size() + 11 <= (16u << 20)) flat += "1234567890,";
  CHECK(child_peak_mib(flat, "more than 256 KiB without a value", &status) < 200);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
}

TEST_CASE("yaml_input: brackets in quoted and plain values and comments are not nesting", "[core][yaml_input]") {
  const std::string many(100, '[');
  const auto n = load_yaml_document("a: \"" + many + "\"\nb: '" + many + "'\nc: x" + many + "\n# " + many +
                                        "\nd: [1, '" + many + "', \"]]\"]\n",
                                    "ok.yaml");
  CHECK(n["a"].as<std::string>() == many);
  CHECK(n["b"].as<std::string>() == many);
  CHECK(n["c"].as<std::string>() == "x" + many);
  CHECK(n["d"][1].as<std::string>() == many);
  CHECK(n["d"][2].as<std::string>() == "]]");
}

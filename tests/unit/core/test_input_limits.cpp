// Limits on files users hand us: size before parsing, depth and node count while parsing, every
// refusal one paragraph naming the file and the limit.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using mtrain::InputLimits;

namespace {

std::string nested(int depth) { return std::string(static_cast<size_t>(depth), '[') + std::string(static_cast<size_t>(depth), ']'); }

}  // namespace

TEST_CASE("parse_json_limited: within the limits it is json::parse", "[input_limits]") {
  CHECK(mtrain::parse_json_limited(R"({"a": [1, 2, {"b": null}]})", "x.json")["a"][1] == 2);
  CHECK(mtrain::parse_json_limited("// note\n{\"a\": 1}", "x.json", /*ignore_comments=*/true)["a"] == 1);
  CHECK_THROWS_AS(mtrain::parse_json_limited("{\"a\": ", "x.json"), nlohmann::json::parse_error);
}

TEST_CASE("parse_json_limited: too large, too deep, too many values", "[input_limits]") {
  InputLimits lim;
  lim.max_bytes = 64;
  lim.max_depth = 4;
  lim.max_nodes = 10;
  CHECK_THROWS_WITH(mtrain::parse_json_limited(std::string(65, ' ') + "1", "big.json", false, lim),
                    Catch::StartsWith("error: big.json: the file is larger than"));
  CHECK_NOTHROW(mtrain::parse_json_limited(nested(4), "ok.json", false, lim));
  CHECK_THROWS_WITH(mtrain::parse_json_limited(nested(6), "deep.json", false, lim),
                    Catch::Contains("deep.json") && Catch::Contains("more than 4 levels"));
  CHECK_THROWS_WITH(mtrain::parse_json_limited("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "many.json", false, lim),
                    Catch::Contains("many.json") && Catch::Contains("more than 10 values"));
  try {
    mtrain::parse_json_limited(nested(6), "deep.json", false, lim);
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == mtrain::kExitUsage);  // bad input: exit 2 before any rank starts
  }
}

TEST_CASE("read_input_file: whole small files, nothing for missing ones, a bound on endless ones", "[input_limits]") {
  const mtrain::testing::TempDir t("mtrain_test_input_limits");
  const fs::path& dir = t.path;
  std::ofstream(dir / "small.yaml") << "a: 1\n";
  CHECK(mtrain::read_input_file((dir / "small.yaml").string()) == std::optional<std::string>("a: 1\n"));
  CHECK_FALSE(mtrain::read_input_file((dir / "missing.yaml").string()).has_value());
  CHECK_FALSE(mtrain::read_input_file(dir.string()).has_value());  // a folder reads as unreadable
  InputLimits lim;
  lim.max_bytes = 1000;
  CHECK_THROWS_WITH(mtrain::read_input_file("/dev/zero", lim), Catch::Contains("/dev/zero") && Catch::Contains("larger than"));
}

TEST_CASE("parse_json_limited: linear in the number of objects (issue 29)", "[input_limits][hostile]") {
  // 40,000 objects in one object: the parser callback made nlohmann rescan the parent at the end
  // of every child (24 s for a checkpoint manifest of 4·10^4 tensors). Now well under a second.
  std::string text = "{";
  for (int i = 0; i < 40000; ++i) text += fmt::format("{}\"t{}\": {{\"shape\": [1, 2], \"dtype\": \"float32\"}}", i ? "," : "", i);
  text += "}";
  InputLimits lim;
  lim.max_bytes = 256u << 20;
  lim.max_nodes = 16u << 20;
  const auto t0 = std::chrono::steady_clock::now();
  const auto j = mtrain::parse_json_limited(text, "manifest.json", false, lim);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(j.size() == 40000);
  CHECK(s < 3.0);
  // Brackets inside strings count for nothing; a comment's only with comments on.
  CHECK_NOTHROW(mtrain::parse_json_limited("{\"a\": \"" + std::string(100, '[') + "\"}", "s.json"));
  CHECK_NOTHROW(mtrain::parse_json_limited("/* " + std::string(100, '[') + " */ {}", "c.json", true));
  CHECK_THROWS_WITH(mtrain::parse_json_limited(std::string(100000, '['), "deep.json"),
                    Catch::Contains("deep.json") && Catch::Contains("more than 64 levels"));
}

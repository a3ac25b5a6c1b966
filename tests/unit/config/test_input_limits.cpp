// Hostile structured input (issue 17 item 7): every YAML and JSON reader of user files refuses a
// file over the size limit, nesting deeper than the depth limit, and an alias bomb (a few hundred
// bytes whose aliases expand to millions of nodes) with one paragraph, quickly, instead of
// expanding it until memory runs out.
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>

#include <catch2/catch.hpp>

#include "lib/config/import.hpp"
#include "lib/config/validate.hpp"
#include "lib/config/yaml_layer.hpp"
#include "lib/core/error.hpp"

using namespace mtrain;
using namespace mtrain::config;

namespace {

// `levels` anchors, each a list of nine aliases of the one before: 9^levels leaves.
std::string alias_bomb(int levels, const std::string& first_key) {
  std::string s = first_key + ": MULTI_GPU\na0: &a0 [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < levels; ++i) {
    s += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) s += (k ? ",*a" : "*a") + std::to_string(i - 1);
    s += "]\n";
  }
  return s + "num_processes: *a" + std::to_string(levels - 1) + "\n";
}

std::string nested(int depth) { return "distributed_type: MULTI_GPU\nx: " + std::string(depth, '[') + std::string(depth, ']') + "\n"; }

template <class F>
std::string refusal(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    f();
  } catch (const Error& e) {
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
    CHECK(e.exit_code() == kExitUsage);
    return e.paragraph();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("an accelerate YAML alias bomb is refused by config import", "[config][limits]") {
  // 9^6 = 531441 leaves from ~300 bytes: small enough that an unlimited reader survives it here.
  const std::string p = refusal([&] { import_text(job_registry(), alias_bomb(6, "distributed_type"), "bomb.yaml"); });
  CHECK_THAT(p, Catch::Contains("bomb.yaml"));
  CHECK_THAT(p, Catch::Contains("alias"));
}

TEST_CASE("a job file alias bomb is refused by the job YAML reader", "[config][limits]") {
  YamlLayer y = parse_yaml_layer(job_registry(), alias_bomb(6, "strategy"), "job.yaml", Source::JobFile);
  REQUIRE(!y.issues.empty());
  CHECK_THAT(y.issues.front().text(), Catch::Contains("alias"));
}

TEST_CASE("deep nesting is refused in YAML and in DeepSpeed JSON", "[config][limits]") {
  CHECK_THAT(refusal([&] { import_text(job_registry(), nested(200), "deep.yaml"); }), Catch::Contains("nest"));
  const std::string json = "{\"train_batch_size\": 8, \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  CHECK_THAT(refusal([&] { import_text(job_registry(), json, "deep.json"); }), Catch::Contains("nest"));
}

TEST_CASE("a config file over the size limit is refused before parsing", "[config][limits]") {
  const std::string big = "train_batch_size: 8\n# " + std::string(20u << 20, 'x') + "\n";
  CHECK_THAT(refusal([&] { import_text(job_registry(), big, "big.yaml"); }), Catch::Contains("MiB"));
  YamlLayer y = parse_yaml_layer(job_registry(), big, "big.yaml", Source::JobFile);
  REQUIRE(!y.issues.empty());
  CHECK_THAT(y.issues.front().text(), Catch::Contains("MiB"));
}

TEST_CASE("ordinary files with a few aliases still load", "[config][limits]") {
  const std::string ok = "base: &b {lr: 0.001}\noptim: *b\n";
  CHECK_NOTHROW(yaml_to_json(ok, "ok.yaml"));
}

TEST_CASE("config validate lists at most 50 problems, then counts the rest", "[config][limits]") {
  std::string text;
  for (int i = 0; i < 1000; ++i) text += "no_such_setting_" + std::to_string(i) + ": 1\n";
  ValidateReport rep = validate_text(job_registry(), text, "many.yaml");
  CHECK_FALSE(rep.ok());
  const std::string out = format_report(rep);
  CHECK(std::count(out.begin(), out.end(), '\n') <= 52);
  CHECK_THAT(out, Catch::Contains("and 950 more problems"));
}


// The text form of `mtrain env` (lib/envreport/render_text.cpp): "key: value" rows whose values
// line up per section, with at least one space after the colon however long the key.
#include <catch2/catch.hpp>

#include <set>

#include "machine.hpp"
#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"

using namespace mtrain::envreport;
using namespace mtrain::envreport::testing;
using json = nlohmann::json;

namespace {

// The lines of one section of the text report, title excluded.
std::vector<std::string> section_lines(const std::string& text, const std::string& title) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& l : mtrain::str::split(text, '\n')) {
    if (!l.empty() && l[0] != ' ') {
      in = l == title;
      continue;
    }
    if (in && !l.empty()) out.push_back(l);
  }
  return out;
}

// Where each "key: value" row's value starts (the first character after the key's colon and the
// padding that follows it).
std::set<size_t> value_columns(const std::vector<std::string>& rows) {
  std::set<size_t> cols;
  for (const auto& l : rows) {
    size_t colon = l.find(':');
    REQUIRE(colon != std::string::npos);
    cols.insert(l.find_first_not_of(' ', colon + 1));
  }
  return cols;
}

}  // namespace

TEST_CASE("render_text: a key of 16 characters or more keeps a space before its value", "[envreport]") {
  MemoryProbe p = healthy();
  p.env["CUDA_VISIBLE_DEVICES"] = "0,1";
  p.env["OMP_NUM_THREADS"] = "2";
  p.nics.push_back({"veth0123456789ab", true, false, {}});
  json r = collect_report(p, opts());
  r["user_config"] = {{"path", "/home/u/.config/mtrain/config.yaml"},
                      {"exists", true},
                      {"settings", {{"train.batch_size", 8}}}};
  const std::string text = render_text(r);

  CHECK_THAT(text, Catch::Contains("  CUDA_VISIBLE_DEVICES: 0,1   (environment; CUDA)"));
  CHECK_THAT(text, !Catch::Contains("CUDA_VISIBLE_DEVICES:0,1"));
  CHECK_THAT(text, Catch::Contains("OMP_NUM_THREADS:      2   (environment;"));
  CHECK_THAT(text, Catch::Contains("    train.batch_size:   8   (user file)"));
  CHECK_THAT(text, Catch::Contains("  veth0123456789ab: up\n"));

  SECTION("the values of a section share one column, one space past its longest key") {
    const auto env = section_lines(text, "environment");
    REQUIRE(env.size() >= 5);  // the two variables, the unset rows, the user file and its setting
    CHECK(value_columns(env) == std::set<size_t>{std::string("  CUDA_VISIBLE_DEVICES: ").size()});
    CHECK(value_columns(section_lines(text, "network")) == std::set<size_t>{std::string("  veth0123456789ab: ").size()});
  }
  SECTION("a section of short keys keeps the 16-character column") {
    CHECK_THAT(text, Catch::Contains("\n  version:        0.1.0\n"));
    CHECK(value_columns(section_lines(text, "system")) == std::set<size_t>{2 + 16});
  }
}

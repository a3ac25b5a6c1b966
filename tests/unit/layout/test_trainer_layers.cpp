// The trainer's internal layers (docs/architecture.md §10), read from the includes of every file
// under lib/trainer: a file of part P may include the headers of P and of the parts P may use,
// nothing else. The trainer is one library (one precompiled header), so the build cannot refuse
// such an include the way it refuses one between lib modules; this test does.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>

#include "source_tree.hpp"

using namespace mtrain::layout;

namespace {

// Part → the parts it may include (§10). Lower layers first.
const std::map<std::string, std::set<std::string>>& allowed() {
  static const std::map<std::string, std::set<std::string>> a = {
      {"comm", {}},
      {"optim", {"comm"}},
      {"strategy", {"comm", "optim"}},
      {"checkpoint", {"comm", "strategy"}},
      {"model", {"comm", "optim", "strategy", "checkpoint"}},
      {"data", {"comm", "checkpoint"}},
      {"loop", {"comm", "optim", "strategy", "checkpoint", "model", "data"}},
      {"estimate", {"comm", "optim", "strategy", "checkpoint", "model", "data", "loop"}},
      {"bench", {"comm"}},
  };
  return a;
}

// Forbidden includes that exist today, each to be removed (the test fails once one is gone, so
// the list only shrinks): the strategies ask a TaskModel for its blocks, and datasets read the
// model's sizes from ModelSpec.
const std::set<std::pair<std::string, std::string>>& known_violations() {
  static const std::set<std::pair<std::string, std::string>> v = {
      {"lib/trainer/strategy/zero.cpp", "model"},
      {"lib/trainer/strategy/fsdp.cpp", "model"},
      {"lib/trainer/data/dataset.hpp", "model"},
      {"lib/trainer/data/tensors.cpp", "model"},
  };
  return v;
}

// The trainer part of a path under lib/trainer ("lib/trainer/comm/x.cpp" → "comm"); "" for a
// file at the top (pch.hpp).
std::string part_of(const std::string& path) {
  const std::string prefix = "lib/trainer/";
  const std::string rest = path.substr(prefix.size());
  const auto slash = rest.find('/');
  return slash == std::string::npos ? "" : rest.substr(0, slash);
}

// The trainer parts a file includes ("lib/trainer/<part>/...").
std::set<std::string> parts_included(const std::string& text) {
  const std::string prefix = "lib/trainer/";
  std::set<std::string> out;
  for (const auto& path : quoted_includes(text)) {
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    const auto slash = path.find('/', prefix.size());
    if (slash != std::string::npos) out.insert(path.substr(prefix.size(), slash - prefix.size()));
  }
  return out;
}

}  // namespace

TEST_CASE("every trainer file includes only its own part and the parts below it", "[layout][trainer]") {
  const auto files = files_under("lib/trainer", {".cpp", ".hpp"});
  REQUIRE(files.size() > 100);
  std::set<std::pair<std::string, std::string>> seen_violations;
  for (const auto& f : files) {
    const std::string part = part_of(f);
    if (part.empty()) continue;
    INFO(f << " is in part '" << part << "' (docs/architecture.md §10)");
    REQUIRE(allowed().count(part) == 1);
    for (const auto& used : parts_included(read_text(source_dir() + "/" + f))) {
      if (used == part || allowed().at(part).count(used)) continue;
      if (known_violations().count({f, used})) {
        seen_violations.insert({f, used});
        continue;
      }
      FAIL_CHECK(f << " includes a header of '" << used << "', which '" << part << "' may not use");
    }
  }
  for (const auto& v : known_violations()) {
    INFO(v.first << " no longer includes '" << v.second << "': remove it from known_violations()");
    CHECK(seen_violations.count(v) == 1);
  }
}

TEST_CASE("the layers have no cycle: no part may use a part that may use it", "[layout][trainer]") {
  for (const auto& [part, uses] : allowed()) {
    for (const auto& u : uses) {
      INFO(part << " and " << u);
      REQUIRE(allowed().count(u) == 1);
      CHECK(allowed().at(u).count(part) == 0);
    }
  }
}

TEST_CASE("parts_included reads quoted trainer includes only", "[layout][trainer]") {
  const std::string text =
      "#include <ATen/ATen.h>\n#include \"lib/core/error.hpp\"\n#include \"lib/trainer/comm/compat.hpp\"\n"
      "  # include \"lib/trainer/model/model.hpp\"\n// #include \"lib/trainer/data/x.hpp\" in a comment\n";
  CHECK(parts_included(text) == std::set<std::string>{"comm", "model"});
}

TEST_CASE("docs/architecture.md §10 lists the layers this test enforces", "[layout][trainer]") {
  const auto table = markdown_table(read_text(source_dir() + "/docs/architecture.md"), "## §10");
  REQUIRE(table.size() == allowed().size());
  for (const auto& [part, uses] : allowed()) {
    INFO("part " << part);
    REQUIRE(table.count(part) == 1);
    std::set<std::string> listed;
    std::istringstream in(table.at(part).at(1));
    for (std::string item; std::getline(in, item, ',');) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      if (allowed().count(item)) listed.insert(item);
    }
    CHECK(listed == uses);
  }
}

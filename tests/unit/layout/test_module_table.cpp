// docs/architecture.md §2 is the one module table: every mtrain_module() of lib/*/CMakeLists.txt
// has a row, every row is a module, and "may link" names exactly the modules it links.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>
#include <string>

#include "source_tree.hpp"

using namespace mtrain::layout;

namespace {
// The module names among the comma-separated entries of a "may link" cell.
std::set<std::string> modules_named(const std::string& cell, const std::set<std::string>& modules) {
  std::set<std::string> out;
  std::istringstream in(cell);
  for (std::string item; std::getline(in, item, ',');) {
    const auto b = item.find_first_not_of(' ');
    const auto e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    item = item.substr(b, e - b + 1);
    if (modules.count(item)) out.insert(item);
  }
  return out;
}
}  // namespace

TEST_CASE("docs/architecture.md's module table matches lib/*/CMakeLists.txt", "[layout]") {
  const auto cmake = cmake_modules();
  REQUIRE(cmake.size() > 10);
  REQUIRE(cmake.count("core"));
  const auto table = markdown_table(read_text(source_dir() + "/docs/architecture.md"), "## §2");
  std::set<std::string> names;
  for (const auto& [n, deps] : cmake) names.insert(n);
  for (const auto& [n, deps] : cmake) {
    INFO("module " << n << " (lib/*/CMakeLists.txt)");
    REQUIRE(table.count(n) == 1);
    const auto& row = table.at(n);
    REQUIRE(row.size() == 3);
    CHECK(modules_named(row[2], names) == deps);
  }
  for (const auto& [n, row] : table) {
    INFO("row '" << n << "' of docs/architecture.md §2 names no mtrain_module()");
    CHECK(cmake.count(n) == 1);
  }
}

TEST_CASE("the README keeps no copy of the module table", "[layout]") {
  CHECK(read_text(source_dir() + "/README.md").find("| module | computes | may link |") == std::string::npos);
}

TEST_CASE("markdown_table reads the first table of a section", "[layout]") {
  const std::string md = "# t\n## §1 A\n| x | y |\n|---|---|\n| a | b, c |\n## §2 B\ntext\n\n| m | n |\n|---|---|\n"
                         "| p | q |\n| r | s |\n\n| other | table |\n## §3\n| z | z |\n";
  const auto t = markdown_table(md, "## §2");
  REQUIRE(t.size() == 2);
  CHECK(t.at("p") == std::vector<std::string>{"p", "q"});
  CHECK(t.at("r") == std::vector<std::string>{"r", "s"});
  CHECK(markdown_table(md, "## §1").at("a")[1] == "b, c");
}

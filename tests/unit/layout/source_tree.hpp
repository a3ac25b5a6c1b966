#pragma once
// Reading the source tree for the layout tests (MTRAIN_SOURCE_DIR, the checkout being tested).
#include <map>
#include <set>
#include <string>
#include <vector>

namespace mtrain::layout {

std::string source_dir();
std::string read_text(const std::string& path);
// Files under `dir` (relative to the source folder) whose names end with one of `suffixes`,
// as paths relative to the source folder, sorted.
std::vector<std::string> files_under(const std::string& dir, const std::vector<std::string>& suffixes);

// The paths of the quoted includes of C++ source `text` (`#include "x"`, `# include "x"`), in order;
// angle-bracket includes and commented-out lines are not includes of the tree.
std::vector<std::string> quoted_includes(const std::string& text);

// Each mtrain_module(NAME ... DEPS ... PRIVATE_DEPS ...) of lib/*/CMakeLists.txt: NAME → the
// modules it links (mtrain::x and mtrain_x in either list).
std::map<std::string, std::set<std::string>> cmake_modules();

// The first table of the section of `markdown` whose heading starts with `heading`: first cell →
// the row's cells (trimmed).
std::map<std::string, std::vector<std::string>> markdown_table(const std::string& markdown, const std::string& heading);

}  // namespace mtrain::layout

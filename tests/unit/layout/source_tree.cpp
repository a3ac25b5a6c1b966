#include "source_tree.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fs = std::filesystem;

namespace mtrain::layout {

std::string source_dir() { return MTRAIN_SOURCE_DIR; }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> files_under(const std::string& dir, const std::vector<std::string>& suffixes) {
  std::vector<std::string> out;
  const fs::path root = source_dir();
  for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    for (const auto& s : suffixes) {
      if (rel.size() >= s.size() && rel.compare(rel.size() - s.size(), s.size(), s) == 0) {
        out.push_back(rel);
        break;
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A plain scan, not std::regex: gcc 12 warns (-Wmaybe-uninitialized) inside <regex> itself.
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    const auto b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] != '#') continue;
    const auto word = line.find_first_not_of(" \t", b + 1);
    if (word == std::string::npos || line.compare(word, 7, "include") != 0) continue;
    const auto open = line.find_first_not_of(" \t", word + 7);
    if (open == std::string::npos || line[open] != '"') continue;
    const auto close = line.find('"', open + 1);
    if (close != std::string::npos) out.push_back(line.substr(open + 1, close - open - 1));
  }
  return out;
}

namespace {
std::string without_comments(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out += line.substr(0, line.find('#')) + "\n";
  return out;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}
}  // namespace

std::map<std::string, std::set<std::string>> cmake_modules() {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& f : files_under("lib", {"/CMakeLists.txt"})) {
    const std::string text = without_comments(read_text(source_dir() + "/" + f));
    for (size_t at = text.find("mtrain_module("); at != std::string::npos; at = text.find("mtrain_module(", at + 1)) {
      const size_t open = at + std::string("mtrain_module(").size();
      std::istringstream args(text.substr(open, text.find(')', open) - open));
      std::string name, word;
      args >> name;
      auto& deps = out[name];
      bool in_deps = false;
      while (args >> word) {
        if (word == "DEPS" || word == "PRIVATE_DEPS") in_deps = true;
        else if (word == "SOURCES" || word == "DIR") in_deps = false;
        else if (in_deps && word.rfind("mtrain::", 0) == 0) deps.insert(word.substr(8));
        else if (in_deps && word.rfind("mtrain_", 0) == 0) deps.insert(word.substr(7));
      }
    }
  }
  return out;
}

std::map<std::string, std::vector<std::string>> markdown_table(const std::string& markdown, const std::string& heading) {
  std::map<std::string, std::vector<std::string>> rows;
  const size_t sec = markdown.find("\n" + heading);
  if (sec == std::string::npos) throw std::runtime_error("no section '" + heading + "'");
  std::istringstream in(markdown.substr(sec + 1));
  std::string line;
  std::getline(in, line);  // the heading
  bool seen = false, header = true;
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) break;
    if (line.rfind("|", 0) != 0) {
      if (seen) break;  // the end of the first table
      continue;
    }
    seen = true;
    if (header || line.rfind("|---", 0) == 0) {
      header = false;
      continue;
    }
    std::vector<std::string> cells;
    std::istringstream cols(line.substr(1));
    for (std::string c; std::getline(cols, c, '|');) cells.push_back(trim(c));
    if (!cells.empty()) rows[cells.front()] = cells;
  }
  return rows;
}

}  // namespace mtrain::layout

// Claims of docs/architecture.md that reading the tree can check (issue 41 item 8), beside the
// module table (test_module_table), §9's compat rule (test_build_lines), §10's layers
// (test_trainer_layers), descriptors (test_descriptors) and thin commands (test_thin_commands).
// §3's variables and §4's plan keys are checked against the plan itself (tests/unit/plan).
#include <catch2/catch.hpp>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "source_tree.hpp"

using namespace mtrain::layout;

namespace {

std::vector<std::string> sources_under(const std::vector<std::string>& dirs) {
  std::vector<std::string> out;
  for (const auto& d : dirs)
    for (auto& f : files_under(d, {".cpp", ".hpp", ".h"})) out.push_back(std::move(f));
  return out;
}

// The modules `mtrain` links: apps/mtrain/CMakeLists.txt's mtrain::X and its foreach(m …) list,
// with everything those link in turn.
std::set<std::string> modules_of_mtrain(const std::map<std::string, std::set<std::string>>& modules) {
  const std::string cmake = read_text(source_dir() + "/apps/mtrain/CMakeLists.txt");
  std::vector<std::string> todo;
  const std::regex named(R"(mtrain::(\w+))");
  for (auto it = std::sregex_iterator(cmake.begin(), cmake.end(), named); it != std::sregex_iterator(); ++it)
    todo.push_back((*it)[1]);
  const auto list = cmake.find("foreach(m ");
  REQUIRE(list != std::string::npos);
  std::istringstream words(cmake.substr(list + 10, cmake.find(')', list) - list - 10));
  for (std::string w; words >> w;) todo.push_back(w);
  std::set<std::string> out;
  while (!todo.empty()) {
    const std::string m = todo.back();
    todo.pop_back();
    if (!modules.count(m) || !out.insert(m).second) continue;
    for (const auto& d : modules.at(m)) todo.push_back(d);
  }
  return out;
}

// The third-party names of a "may link" cell: each entry that is no module, up to its first
// space, '(' or '.' ("Boost.Asio" → "Boost", "OpenSSL (static; …)" → "OpenSSL").
std::set<std::string> third_party(const std::string& cell,
                                  const std::map<std::string, std::set<std::string>>& modules) {
  std::set<std::string> out;
  std::istringstream in(cell);
  for (std::string item; std::getline(in, item, ',');) {
    const auto b = item.find_first_not_of(' ');
    if (b == std::string::npos) continue;
    const std::string name = item.substr(b, item.find_first_of(" (.", b) - b);
    if (!modules.count(name)) out.insert(name);
  }
  return out;
}

}  // namespace

// §1 "it links only …": the libraries of every module `mtrain` links, per §2's table.
TEST_CASE("§1 names every library mtrain links, and LibTorch is not one", "[layout]") {
  const auto modules = cmake_modules();
  const std::string doc = read_text(source_dir() + "/docs/architecture.md");
  const auto table = markdown_table(doc, "## §2");
  const auto at = doc.find("so it links only ");
  REQUIRE(at != std::string::npos);
  const std::string sentence = doc.substr(at, doc.find("statically", at) - at);
  const auto linked = modules_of_mtrain(modules);
  REQUIRE(linked.count("launch"));
  CHECK_FALSE(linked.count("trainer"));
  for (const auto& m : linked) {
    REQUIRE(table.count(m));
    for (const auto& lib : third_party(table.at(m)[2], modules)) {
      INFO("module " << m << " links " << lib << "; §1 says: " << sentence);
      CHECK(lib != "LibTorch");
      CHECK(sentence.find(lib) != std::string::npos);
    }
  }
  CHECK(third_party("core, Boost.Asio, OpenSSL (static; TLS to etcd only)", modules) ==
        std::set<std::string>{"Boost", "OpenSSL"});
}

// §1 "The worker never parses YAML or flags": neither yaml-cpp nor CLI11 is included there.
TEST_CASE("§1 the trainer and mtrain-worker include no YAML or flag parser", "[layout]") {
  const std::regex parser(R"(#\s*include\s*[<"](yaml-cpp/|CLI/))");
  const auto files = sources_under({"lib/trainer", "apps/mtrain-worker"});
  REQUIRE(files.size() > 100);
  for (const auto& f : files) {
    INFO(f);
    CHECK_FALSE(std::regex_search(read_text(source_dir() + "/" + f), parser));
  }
}

// §2 "`mtrain::` names only the modules above".
TEST_CASE("§2 every mtrain:: target in the build is a module of the table", "[layout]") {
  const auto table = markdown_table(read_text(source_dir() + "/docs/architecture.md"), "## §2");
  std::vector<std::string> files = {"CMakeLists.txt"};
  for (const auto& dir : {"lib", "apps", "tests", "cmake", "bench"})
    for (auto& f : files_under(dir, {"CMakeLists.txt", ".cmake"})) files.push_back(std::move(f));
  const std::regex named(R"(mtrain::(\w+))");
  int seen = 0;
  for (const auto& f : files) {
    const std::string text = read_text(source_dir() + "/" + f);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), named); it != std::sregex_iterator(); ++it) {
      INFO(f << ": " << it->str());
      CHECK(table.count((*it)[1]) == 1);
      ++seen;
    }
  }
  CHECK(seen > 50);
}

// §2/§9: only the trainer (and the worker that runs it) includes LibTorch; its torch-free core,
// the shm module, includes none.
TEST_CASE("§9 only the trainer and mtrain-worker include LibTorch, and shm does not", "[layout]") {
  const std::regex torch(R"(#\s*include\s*[<"](torch/|ATen/|c10/|caffe2/))");
  const auto files = sources_under({"lib", "apps"});
  REQUIRE(files.size() > 200);
  int torch_files = 0;
  for (const auto& f : files) {
    const bool includes = std::regex_search(read_text(source_dir() + "/" + f), torch);
    const bool trainer = f.rfind("lib/trainer/", 0) == 0 || f.rfind("apps/mtrain-worker/", 0) == 0;
    const bool shm =
        f.rfind("lib/trainer/comm/shm_collectives.", 0) == 0 || f.rfind("lib/trainer/comm/block_pool.", 0) == 0;
    INFO(f);
    CHECK_FALSE((includes && (!trainer || shm)));
    torch_files += includes;
  }
  CHECK(torch_files > 10);  // the pattern finds the trainer's
}

// docs/architecture.md §2: an include names a file a reader can open from the repository root
// ("lib/<module>/<file>.hpp"), or one of the few headers the build writes ("generated/..."), whose
// template in the tree is named here. The compiler cannot hold the tree to this: it finds headers
// through the per-module include roots of cmake/modules.cmake (links in the build tree), which
// would as well resolve a name that is no path of the checkout.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>

#include "source_tree.hpp"

using namespace mtrain::layout;
namespace fs = std::filesystem;

namespace {
// Each header the build writes → the file of the tree it is made from.
const std::map<std::string, std::string>& generated_headers() {
  static const std::map<std::string, std::string> m = {
      {"generated/version.hpp", "lib/core/version.hpp.in"},
      {"generated/git_revision.hpp", "cmake/git_revision.cmake"},
      {"generated/slurm/embedded_templates.hpp", "lib/slurm/embedded_templates.hpp.in"},
      {"tensorboard_event.pb.h", "lib/tracking/tensorboard_event.proto"},
      {"etcd_api.grpc.pb.h", "lib/rendezvous/etcd_api.proto"},
  };
  return m;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.compare(0, prefix.size(), prefix) == 0; }

// Whether `path` is a file beside `file` (a program's or a module's private header), or, for a
// test, a file of a folder above it up to tests/ (the helper roots tests/CMakeLists.txt adds).
bool beside_or_test_helper(const std::string& file, const std::string& path) {
  const fs::path own = fs::path(file).parent_path();
  if (fs::is_regular_file(fs::path(source_dir()) / own / path)) return true;
  if (!starts_with(file, "tests/")) return false;
  for (fs::path dir = own.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (fs::is_regular_file(fs::path(source_dir()) / dir / path)) return true;
  }
  return false;
}
}  // namespace

TEST_CASE("every quoted include of lib/, apps/ and tests/ is a path from the repository root", "[layout]") {
  size_t checked = 0;
  for (const std::string dir : {"lib", "apps", "tests"}) {
    for (const auto& f : files_under(dir, {".cpp", ".hpp", ".h"})) {
      for (const auto& path : quoted_includes(read_text(source_dir() + "/" + f))) {
        INFO(f << " includes \"" << path << "\"");
        if (generated_headers().count(path)) continue;
        if (starts_with(path, "lib/")) {
          CHECK(fs::is_regular_file(fs::path(source_dir()) / path));
          ++checked;
          continue;
        }
        // lib/fmt/format.cpp includes fmt's own sources.
        CHECK((beside_or_test_helper(f, path) || starts_with(f, "lib/fmt/")));
        CHECK_FALSE(starts_with(path, "mtrain/"));
      }
    }
  }
  CHECK(checked > 1000);
}

TEST_CASE("each generated header's template is in the tree", "[layout]") {
  for (const auto& [header, from] : generated_headers()) {
    INFO(header << " is made from " << from);
    CHECK(fs::is_regular_file(fs::path(source_dir()) / from));
  }
}

TEST_CASE("quoted_includes reads quoted includes only", "[layout]") {
  const std::string text =
      "#include <vector>\n#include \"lib/core/error.hpp\"\n  #  include \"a/b.hpp\" // why\n"
      "// #include \"lib/x.hpp\" in a comment\n#define include \"no\"\n#pragma once\n";
  CHECK(quoted_includes(text) == std::vector<std::string>{"lib/core/error.hpp", "a/b.hpp"});
}

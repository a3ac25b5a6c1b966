// docs/architecture.md §9: every API difference between the two LibTorch lines, and between CUDA
// and CPU builds, is in lib/trainer/comm/compat.{hpp,cpp} — the only place that tests
// TORCH_VERSION_* or MTRAIN_WITH_CUDA (issue 41 item 8: the claim had drifted; checkpointer,
// comm_bench and build_info tested MTRAIN_WITH_CUDA themselves).
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "source_tree.hpp"

using namespace mtrain::layout;

TEST_CASE("only compat tests the LibTorch line or the CUDA build", "[layout]") {
  const std::vector<std::string> allowed = {"lib/trainer/comm/compat.hpp", "lib/trainer/comm/compat.cpp"};
  std::vector<std::string> files = files_under("lib", {".cpp", ".hpp"});
  for (const auto& f : files_under("apps", {".cpp", ".hpp"})) files.push_back(f);
  REQUIRE(files.size() > 100);
  for (const auto& f : files) {
    if (f == allowed[0] || f == allowed[1]) continue;
    const std::string text = read_text(source_dir() + "/" + f);
    INFO(f);
    CHECK(text.find("MTRAIN_WITH_CUDA") == std::string::npos);
    CHECK(text.find("TORCH_VERSION_") == std::string::npos);
  }
}

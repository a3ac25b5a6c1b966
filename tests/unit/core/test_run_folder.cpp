// Run folders (MMEngine's work_dir/<YYYYmmdd_HHMMSS>/): names, the claim of a new folder when
// runs start in the same second, run.json, and the `latest` links readers of the old single-run
// layout follow.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "lib/core/error.hpp"
#include "lib/core/run_folder.hpp"

namespace fs = std::filesystem;
using namespace mtrain::runs;

namespace {

using mtrain::testing::TempDir;

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

}  // namespace

TEST_CASE("run folder names: the local time, and only what run_folder_name makes", "[run_folder]") {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 10;
  tm.tm_mday = 23;
  tm.tm_hour = 15;
  tm.tm_min = 4;
  tm.tm_sec = 1;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  CHECK(run_folder_name(t) == "20261123_150401");
  CHECK(is_run_folder_name(run_folder_name(t)));
  CHECK(is_run_folder_name("20261123_150401_1"));
  CHECK(is_run_folder_name("20261123_150401_12"));
  for (const char* bad : {"", "latest", "checkpoints", "20261123_15040", "20261123-150401", "2026112a_150401",
                          "20261123_150401_", "20261123_150401_x", "20261123_150401x", "20261123_150401__1"})
    CHECK_FALSE(is_run_folder_name(bad));
}

TEST_CASE("start_run_folder: run.json, a second run in the same second, the latest links", "[run_folder]") {
  TempDir t("mtrain_test_run_folder");
  const std::string wd = (t.path / "work").string();
  const std::time_t now = 1790000000;
  const std::string first = start_run_folder(wd, {{"strategy", "ddp"}}, now);
  CHECK(fs::path(first).filename() == run_folder_name(now));
  const auto run = read_json(fs::path(first) / "run.json");
  CHECK(run["strategy"] == "ddp");
  CHECK(run["started"] == static_cast<long long>(now));
  CHECK(run["pid"] == static_cast<long long>(::getpid()));
  CHECK(run["started_text"] == run_folder_name(now));
  CHECK(fs::read_symlink(fs::path(wd) / "latest") == fs::path(first).filename());

  // The same second again: a new folder, never the first one's.
  const std::string second = start_run_folder(wd, {}, now);
  CHECK(fs::path(second).filename() == run_folder_name(now) + "_1");
  CHECK(is_run_folder_name(fs::path(second).filename().string()));
  CHECK(fs::read_symlink(fs::path(wd) / "latest") == fs::path(second).filename());
  CHECK(fs::read_symlink(fs::path(wd) / "metrics.jsonl") == "latest/metrics.jsonl");
  CHECK(fs::read_symlink(fs::path(wd) / "summary.json") == "latest/summary.json");
}

TEST_CASE("start_run_folder: a single-run layout's files are kept as .old", "[run_folder]") {
  TempDir t("mtrain_test_run_folder");
  const fs::path wd = t.path / "work";
  fs::create_directories(wd);
  std::ofstream(wd / "summary.json") << "{\"old\": true}";
  start_run_folder(wd.string(), {}, 1790000000);
  CHECK(fs::is_symlink(fs::symlink_status(wd / "summary.json")));
  REQUIRE(fs::is_regular_file(wd / "summary.json.old"));
  CHECK(read_json(wd / "summary.json.old")["old"] == true);
}

TEST_CASE("start_run_folder: an unwritable work dir is one paragraph naming train.work_dir", "[run_folder]") {
  TempDir t("mtrain_test_run_folder");
  const fs::path file = t.path / "a_file";
  std::ofstream(file) << "x";
  CHECK_THROWS_WITH(start_run_folder((file / "work").string(), {}, 1790000000),
                    Catch::Contains("train.work_dir") && Catch::Contains("a_file"));
}

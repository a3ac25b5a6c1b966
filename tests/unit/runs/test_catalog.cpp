// `mtrain runs`: run folders read back (state, steps, losses, duration), found under a work dir
// or a folder of work dirs, resolved for `runs plot`, and shown as a table and JSON.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/runs/catalog.hpp"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace mtrain::runs;

namespace {

using mtrain::testing::TempDir;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A run folder as the trainer leaves it: run.json at start, metrics.jsonl, summary.json at the end.
fs::path make_run(const fs::path& work_dir, const std::string& name, const json& info,
                  const std::string& metrics, const json& summary = json()) {
  const fs::path d = work_dir / name;
  write(d / "run.json", info.dump());
  write(d / "metrics.jsonl", metrics);
  if (!summary.is_null()) write(d / "summary.json", summary.dump());
  return d;
}

bool never_alive(long long, const std::string&) { return false; }
bool always_alive(long long, const std::string&) { return true; }

const json kInfo = {{"started", 1000}, {"pid", 4242}, {"host", "node7"}, {"strategy", "zero2"},
                    {"model", "gpt"}, {"world_size", 4}, {"total_steps", 50}};
const std::string kMetrics =
    R"({"mode": "train", "step": 10, "loss": 2.5})" "\n"
    R"({"mode": "val", "step": 10, "loss": 2.7})" "\n"
    R"({"mode": "train", "step": 20, "loss": 2.0})" "\n"
    R"({"mode": "train", "step": 30, "lo)";  // a line cut by a crash

}  // namespace

TEST_CASE("runs: an unfinished run is running while its process lives, else failed", "[runs]") {
  TempDir t("mtrain_test_catalog");
  const fs::path d = make_run(t.path, "20261123_150401", kInfo, kMetrics);
  const Run dead = read_run(d.string(), "20261123_150401", never_alive);
  CHECK(dead.state == "failed");
  CHECK(dead.strategy == "zero2");
  CHECK(dead.model == "gpt");
  CHECK(dead.world == 4);
  CHECK(dead.total_steps == 50);
  CHECK(dead.steps == 20);  // the cut line is skipped
  REQUIRE(dead.loss.size() == 2);
  CHECK(dead.loss[1] == std::make_pair(20.0, 2.0));
  REQUIRE(dead.val.size() == 1);
  CHECK(dead.final_loss == Approx(2.0));
  CHECK(dead.final_val == Approx(2.7));
  CHECK(dead.duration_s > 0);  // from `started` to the files' last write
  CHECK(read_run(d.string(), "x", always_alive).state == "running");
  CHECK(read_run(d.string(), "x", nullptr).state == "failed");
}

TEST_CASE("runs: summary.json decides a finished run and wins over run.json", "[runs]") {
  TempDir t("mtrain_test_catalog");
  json summary = {{"strategy", "fsdp"}, {"world_size", 8}, {"steps", 50}, {"final_loss", 1.25},
                  {"final_val", {{"loss", 1.5}}}};
  const fs::path d = make_run(t.path, "20261123_150401", kInfo, kMetrics, summary);
  Run r = read_run(d.string(), "a", always_alive);
  CHECK(r.state == "finished");
  CHECK(r.strategy == "fsdp");
  CHECK(r.model == "gpt");  // absent from the summary: run.json's
  CHECK(r.world == 8);
  CHECK(r.steps == 50);
  CHECK(r.final_loss == Approx(1.25));
  CHECK(r.final_val == Approx(1.5));
  summary["stopped_by"] = "SIGTERM";
  write(d / "summary.json", summary.dump());
  CHECK(read_run(d.string(), "a", always_alive).state == "stopped (SIGTERM)");
}

TEST_CASE("runs: a folder with no readable files is a failed run of zero steps", "[runs]") {
  TempDir t("mtrain_test_catalog");
  const fs::path d = t.path / "20261123_150401";
  fs::create_directories(d);
  write(d / "run.json", "{not json");
  const Run r = read_run(d.string(), "r", never_alive);
  CHECK(r.state == "failed");
  CHECK(r.steps == 0);
  CHECK_FALSE(r.final_loss.has_value());
  CHECK(r.duration_s == 0);  // no start time known
}

TEST_CASE("runs: listed from a run folder, a work dir or a folder of work dirs, oldest first", "[runs]") {
  TempDir t("mtrain_test_catalog");
  make_run(t.path / "exp_b", "20261123_150401", kInfo, kMetrics);
  make_run(t.path / "exp_a", "20261123_160000", kInfo, kMetrics);
  make_run(t.path / "exp_a", "20261123_150401_1", kInfo, kMetrics);
  fs::create_directories(t.path / "exp_a" / "checkpoints");       // not a run
  fs::create_directories(t.path / "exp_a" / "20261123_1504");     // not a run folder name
  make_run(t.path, "20261122_090000", kInfo, kMetrics);           // a run directly in the folder

  const auto all = list_runs(t.path.string());
  std::vector<std::string> names;
  for (const auto& r : all) names.push_back(r.name);
  CHECK(names == std::vector<std::string>{"20261122_090000", "exp_b/20261123_150401", "exp_a/20261123_150401_1",
                                          "exp_a/20261123_160000"});
  const auto one_dir = list_runs((t.path / "exp_a").string());
  REQUIRE(one_dir.size() == 2);
  CHECK(one_dir[0].name == "20261123_150401_1");
  const auto one_run = list_runs((t.path / "exp_b" / "20261123_150401").string());
  REQUIRE(one_run.size() == 1);
  CHECK(one_run[0].name == "20261123_150401");
  CHECK_THROWS_AS(list_runs((t.path / "nope").string()), mtrain::Error);
}

TEST_CASE("runs plot: a run folder is itself, a work dir means its newest run", "[runs]") {
  TempDir t("mtrain_test_catalog");
  make_run(t.path / "wd", "20261123_150401", kInfo, kMetrics);
  const fs::path newest = make_run(t.path / "wd", "20261123_170000", kInfo, kMetrics);
  const Run r = resolve_run((t.path / "wd").string());
  CHECK(r.path == newest.string());
  CHECK(r.name == (t.path / "wd").string());
  CHECK(resolve_run(newest.string()).path == newest.string());
  fs::create_directories(t.path / "empty");
  CHECK_THROWS_WITH(resolve_run((t.path / "empty").string()), Catch::Contains("holds no runs"));
  CHECK_THROWS_WITH(resolve_run((t.path / "missing").string()), Catch::Contains("is not a folder"));
}

TEST_CASE("runs: the table and the JSON", "[runs]") {
  CHECK(runs_table({}) == "no runs\n");
  Run a;
  a.name = "wd/20261123_150401";
  a.strategy = "zero3";
  a.world = 2;
  a.steps = 20;
  a.total_steps = 50;
  a.final_loss = 2.0;
  a.duration_s = 3725;
  a.state = "running";
  a.loss = {{10, 2.5}, {20, 2.0}};
  Run b;
  b.name = "x";
  b.steps = 7;
  b.duration_s = 61;
  b.state = "failed";
  const std::string t = runs_table({a, b});
  const auto first_nl = t.find('\n');
  const std::string header = t.substr(0, first_nl);
  CHECK_THAT(header, Catch::StartsWith("RUN") && Catch::Contains("STRATEGY") && Catch::Contains("STATE"));
  CHECK_THAT(t, Catch::Contains("20/50") && Catch::Contains("2.0000") && Catch::Contains("1h02m") &&
                    Catch::Contains("1m01s") && Catch::Contains("running"));
  // Columns line up: every row puts STRATEGY's column at the same offset.
  const auto col = header.find("STRATEGY");
  CHECK(t.substr(first_nl + 1 + col, 5) == "zero3");

  const json j = runs_json({a, b}, false);
  REQUIRE(j["runs"].size() == 2);
  CHECK(j["runs"][0]["final_loss"] == 2.0);
  CHECK(j["runs"][1]["final_loss"].is_null());
  CHECK(j["runs"][0]["state"] == "running");
  CHECK_FALSE(j["runs"][0].contains("loss"));
  const json curves = runs_json({a}, true);
  CHECK(curves["runs"][0]["loss"] == json::array({json::array({10.0, 2.5}), json::array({20.0, 2.0})}));
}

TEST_CASE("runs: process_alive knows this process and no other host", "[runs]") {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  CHECK(process_alive(::getpid(), host));
  CHECK_FALSE(process_alive(::getpid(), std::string(host) + "-elsewhere"));
  CHECK_FALSE(process_alive(0, host));
}

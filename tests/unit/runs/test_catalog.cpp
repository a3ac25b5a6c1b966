// `mtrain runs`: run folders read back (state, steps, losses, duration), found under a work dir
// or a folder of work dirs, resolved for `runs plot`, and shown as a table and JSON. A work dir is
// untrusted: special files skip their run by name, bad lines and values are skipped by name, and
// control characters never leave as raw bytes (issue 40 items 6, 8, 10, 11, 12).
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "temp_dir.hpp"
#include "lib/core/error.hpp"
#include "lib/runs/catalog.hpp"
#include "lib/runs/segments.hpp"

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

TEST_CASE("runs plot: a run folder is itself, a work dir means every run in it", "[runs]") {
  TempDir t("mtrain_test_catalog");
  const fs::path older = make_run(t.path / "wd", "20261123_150401", kInfo, kMetrics);
  const fs::path newest = make_run(t.path / "wd", "20261123_170000", kInfo, kMetrics);
  // Issue 45: a work dir plotted only its newest run (one dot after a re-export).
  const auto all = resolve_runs((t.path / "wd").string());
  REQUIRE(all.size() == 2);
  CHECK(all[0].path == older.string());
  CHECK(all[1].path == newest.string());
  CHECK(all[1].name == (t.path / "wd" / "20261123_170000").string());
  const auto one = resolve_runs(newest.string());
  REQUIRE(one.size() == 1);
  CHECK(one[0].path == newest.string());
  make_run(t.path / "solo", "20261123_150401", kInfo, kMetrics);
  const auto solo = resolve_runs((t.path / "solo").string());
  REQUIRE(solo.size() == 1);
  CHECK(solo[0].name == (t.path / "solo").string());  // one run: named by the argument, as before
  fs::create_directories(t.path / "empty");
  CHECK_THROWS_WITH(resolve_runs((t.path / "empty").string()), Catch::Contains("holds no runs"));
  CHECK_THROWS_WITH(resolve_runs((t.path / "missing").string()), Catch::Contains("is not a folder"));
}

TEST_CASE("runs: a run continued with --resume auto is one row and one curve, counting the steps each launch ran", "[runs]") {
  TempDir t("mtrain_test_catalog");
  const fs::path wd = t.path / "wd";
  std::string first, second;
  for (int s = 1; s <= 27; ++s) first += json{{"mode", "train"}, {"step", s}, {"loss", 3.0 - s * 0.01}}.dump() + "\n";
  first += json{{"mode", "train"}, {"step", 28}, {"loss", 9.0}}.dump() + "\n";  // logged past the checkpoint: redone
  for (int s = 28; s <= 50; ++s) second += json{{"mode", "train"}, {"step", s}, {"loss", 2.0 - s * 0.01}}.dump() + "\n";
  json info2 = kInfo;
  info2["started"] = 2000;
  info2["start_step"] = 27;
  info2["strategy"] = "fsdp";
  make_run(wd, "20261123_150401", kInfo, first, {{"steps", 27}, {"stopped_by", "SIGINT"}});
  make_run(wd, "20261123_160000", info2, second, {{"steps", 50}, {"final_loss", 1.5}});
  // Another work dir's fresh run between them in time is not part of it.
  make_run(t.path / "other", "20261123_153000", kInfo, kMetrics, {{"steps", 20}});

  const auto runs = list_runs(t.path.string());
  REQUIRE(runs.size() == 2);
  const Run& r = runs[0];
  CHECK(r.name == "wd/20261123_150401");
  REQUIRE(r.segments.size() == 2);
  CHECK(r.segments[1].start_step == 27);
  CHECK(r.steps == 50);
  CHECK(r.strategy == "fsdp");
  CHECK(r.state == "finished");
  CHECK(steps_run(r) == 50);
  CHECK(r.final_loss == 1.5);
  REQUIRE(r.loss.size() == 50);  // step 28 of the first launch was trained again: the second's stands
  for (size_t i = 0; i < r.loss.size(); ++i) CHECK(r.loss[i].first == static_cast<double>(i + 1));
  CHECK(r.loss[27].second == Approx(2.0 - 0.28));
  CHECK(runs[1].name == "other/20261123_153000");
  CHECK(runs[1].segments.empty());

  const std::string table = runs_table(runs);
  CHECK_THAT(table, Catch::Contains("50/50 (2 segments: 27 + 23 steps)"));
  const json j = runs_json(runs, false);
  CHECK(j["runs"][0]["steps_run"] == 50);
  CHECK(j["runs"][0]["segments"].size() == 2);
  CHECK(j["runs"][0]["segments"][1]["start_step"] == 27);
  CHECK_FALSE(j["runs"][1].contains("segments"));

  // A resumed launch whose earlier launch is gone is not counted as 50/50 of its own.
  const auto lone = list_runs((wd / "20261123_160000").string());
  REQUIRE(lone.size() == 1);
  CHECK_THAT(runs_table(lone), Catch::Contains("50/50 (from step 27)"));
  // A fresh run after a finished one in the same work dir stays its own row.
  make_run(wd, "20261123_170000", kInfo, kMetrics, {{"steps", 20}});
  CHECK(list_runs(wd.string()).size() == 2);
}

TEST_CASE("runs: a work dir of runs from step 0 lists as before", "[runs]") {
  TempDir t("mtrain_test_catalog");
  json info = kInfo;
  info["start_step"] = 0;
  make_run(t.path / "wd", "20261123_150401", info, kMetrics, {{"steps", 20}});
  make_run(t.path / "wd", "20261123_160000", info, kMetrics, {{"steps", 20}});
  const auto runs = list_runs((t.path / "wd").string());
  REQUIRE(runs.size() == 2);
  const std::string table = runs_table(runs);
  CHECK_THAT(table, Catch::Contains("20/50  "));
  CHECK_THAT(table, !Catch::Contains("segment"));
}

// clang-tidy's bugprone-incorrect-roundings (issue 41 item 7): `(long long)(s + 0.5)` rounded
// 0.49999999999999994 s up to 1 s, and a span from a hostile run.json past long long's range was an
// undefined conversion (garbage such as "-9223372036854775808s" in the table).
TEST_CASE("runs: durations round to the nearest second, and absurd ones are said as such", "[runs]") {
  Run r;
  r.name = "x";
  r.state = "finished";
  r.duration_s = 0.49999999999999994;
  CHECK_THAT(runs_table({r}), Catch::Contains(" 0s "));
  r.duration_s = 59.5;
  CHECK_THAT(runs_table({r}), Catch::Contains(" 1m00s "));
  r.duration_s = 1e300;
  CHECK_THAT(runs_table({r}), Catch::Contains(" >1000000h "));
  r.duration_s = std::numeric_limits<double>::infinity();
  CHECK_THAT(runs_table({r}), Catch::Contains(" >1000000h "));
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

namespace {

// The warnings joined, for matchers.
std::string joined(const std::vector<std::string>& w) {
  std::string s;
  for (const auto& x : w) s += x + "\n";
  return s;
}

}  // namespace

TEST_CASE("runs: a special file in a run folder skips that run by name, the others are listed", "[runs][hostile]") {
  // A FIFO opened without O_NONBLOCK blocks until a writer comes; /dev/zero and /dev/urandom read
  // without end. Each is refused on the open descriptor before a byte is read.
  for (const std::string file : {"run.json", "summary.json", "metrics.jsonl"}) {
    for (const std::string kind : {"fifo", "zero", "urandom", "folder"}) {
      DYNAMIC_SECTION(file << " as " << kind) {
        TempDir t("mtrain_test_catalog");
        make_run(t.path / "wd", "20261123_150401", kInfo, kMetrics, json{{"steps", 3}});
        const fs::path bad = make_run(t.path / "wd", "20261123_160000", kInfo, kMetrics, json{{"steps", 3}});
        fs::remove(bad / file);
        std::string what;
        if (kind == "fifo") {
          REQUIRE(::mkfifo((bad / file).c_str(), 0600) == 0);
          what = "is a FIFO (named pipe), not a regular file";
        } else if (kind == "folder") {
          fs::create_directories(bad / file);
          what = "is a folder, not a regular file";
        } else {
          fs::create_symlink("/dev/" + kind, bad / file);
          what = "is a symbolic link to /dev/" + kind + " (a character device), not a regular file";
        }
        CHECK_THROWS_WITH(read_run(bad.string(), "x", never_alive), Catch::Contains((bad / file).string() + " " + what));
        std::vector<std::string> skipped;
        const auto runs = list_runs((t.path / "wd").string(), &skipped);
        REQUIRE(runs.size() == 1);
        CHECK(runs[0].name == "20261123_150401");
        REQUIRE(skipped.size() == 1);
        CHECK_THAT(skipped[0], Catch::StartsWith("run 20261123_160000 skipped: ") && Catch::Contains(what));
        // `runs plot` of that run names it too (exit 2); of the work dir it takes the newest readable run.
        CHECK_THROWS_WITH(resolve_runs(bad.string()), Catch::Contains(what));
        std::vector<std::string> skipped2;
        const auto readable = resolve_runs((t.path / "wd").string(), &skipped2);
        REQUIRE(readable.size() == 1);
        CHECK(readable[0].path == (t.path / "wd" / "20261123_150401").string());
        CHECK(skipped2.size() == 1);
      }
    }
  }
}

TEST_CASE("runs: a JSON file over its limit skips the run, metrics.jsonl is read up to its limit", "[runs][hostile]") {
  TempDir t("mtrain_test_catalog");
  const fs::path d = make_run(t.path, "20261123_150401", kInfo, kMetrics, json{{"steps", 3}, {"strategy", "ddp"}});
  RunFileLimits lim;
  lim.max_json_bytes = 16;
  CHECK_THROWS_WITH(read_run(d.string(), "x", never_alive, lim),
                    Catch::Contains("run.json is") && Catch::Contains("more than a run's JSON file may be"));
  lim = RunFileLimits();
  lim.max_metrics_bytes = 50;  // the first line (41 bytes) and part of the second
  const Run r = read_run(d.string(), "x", never_alive, lim);
  CHECK(r.loss.size() == 1);
  CHECK(r.val.empty());  // cut by the limit: unterminated, skipped without a word
  CHECK_THAT(joined(r.warnings), Catch::Contains("metrics.jsonl: larger than 0 MiB; only its first 0 MiB read"));
}

TEST_CASE("runs: a metrics line over the line limit is skipped by name, without holding it", "[runs][hostile]") {
  TempDir t("mtrain_test_catalog");
  const std::string huge = R"({"mode": "train", "step": 5, "loss": 1.0, "pad": ")" + std::string(200000, 'x') + "\"}\n";
  const fs::path d = make_run(t.path, "20261123_150401", kInfo,
                              R"({"mode": "train", "step": 1, "loss": 2.0})" "\n" + huge +
                                  R"({"mode": "train", "step": 9, "loss": 1.5})" "\n");
  const Run r = read_run(d.string(), "x", never_alive);
  REQUIRE(r.loss.size() == 2);
  CHECK(r.loss[1] == std::make_pair(9.0, 1.5));
  CHECK(joined(r.warnings) == (d / "metrics.jsonl").string() + ":2: longer than 64 KiB; line skipped\n");
}

TEST_CASE("runs: bad metrics lines are skipped and named (file:line: what), the run is still listed", "[runs][hostile]") {
  TempDir t("mtrain_test_catalog");
  const std::string lines =
      R"({"mode": "train", "step": 1, "loss": 2.5})" "\n"
      R"({"mode": "train", "step": "one", "loss": 2.0})" "\n"     // 2: the probe's type_error.302
      "[1, 2]\n"                                                  // 3
      R"({"mode": "train", "step": 3, "lo)" "\n"                  // 4: cut, then more lines
      R"({"mode": "train", "step": 1e300, "loss": 2.0})" "\n"     // 5
      R"({"mode": "train", "step": 6, "loss": "low"})" "\n"       // 6
      R"({"mode": 7, "step": 7, "loss": 1.0})" "\n"               // 7
      R"({"mode": "train", "step": 8, "loss": null})" "\n"        // 8: a NaN loss as written: silent
      R"({"mode": "train", "step": 9})" "\n"                      // 9
      R"({"mode": "val", "step": 10, "loss": 1.75})" "\n"
      R"({"mode": "train", "step": 10, "loss": 1.5})" "\n";
  const fs::path d = make_run(t.path / "wd", "20261123_160000", kInfo, lines);
  make_run(t.path / "wd", "20261123_150401", kInfo, kMetrics);
  std::vector<std::string> skipped;
  const auto runs = list_runs((t.path / "wd").string(), &skipped);
  CHECK(skipped.empty());
  REQUIRE(runs.size() == 2);
  const Run& r = runs[1];
  CHECK(r.loss == std::vector<std::pair<double, double>>{{1, 2.5}, {10, 1.5}});
  CHECK(r.val.size() == 1);
  CHECK(r.steps == 10);
  const std::string m = (d / "metrics.jsonl").string();
  REQUIRE(r.warnings.size() == 6);  // lines 2–7 by name (max_named_lines 5, then a count)
  CHECK(r.warnings[0] == m + ":2: \"step\" is \"one\", not a step count (a whole number from 0 to 2^53); line skipped");
  CHECK(r.warnings[1] == m + ":3: not a JSON object; line skipped");
  CHECK_THAT(r.warnings[2], Catch::StartsWith(m + ":4: not JSON (syntax error at byte"));
  CHECK_THAT(r.warnings[3], Catch::StartsWith(m + ":5: \"step\" is 1e+300, not a step count"));
  CHECK(r.warnings[4] == m + ":6: \"loss\" is \"low\", not a finite number; line skipped");
  CHECK(r.warnings[5] == m + ": 2 more bad lines skipped");  // 7 (mode) and 9 (no loss)

  // A run whose every line is bad is listed all the same, with no curve.
  write(d / "metrics.jsonl", R"({"step": "one", "loss": 1})" "\n");
  const Run only_bad = read_run(d.string(), "x", never_alive);
  CHECK(only_bad.loss.empty());
  CHECK(only_bad.state == "failed");
  CHECK(only_bad.warnings.size() == 1);
}

TEST_CASE("runs: values of the wrong type or range are ignored with a warning, never thrown or wrapped", "[runs][hostile]") {
  TempDir t("mtrain_test_catalog");
  json info = kInfo;
  info["total_steps"] = 1e300;
  info["world_size"] = "four";
  info["started"] = -5;
  json summary = {{"steps", 1e300}, {"world_size", 1LL << 40}, {"strategy", 3}, {"final_loss", "low"},
                  {"final_val", {{"loss", "high"}}}};
  const fs::path d = make_run(t.path, "20261123_150401", info, kMetrics, summary);
  Run r;
  REQUIRE_NOTHROW(r = read_run(d.string(), "x", never_alive));
  CHECK(r.steps == 20);        // from metrics.jsonl: the summary's 1e300 is not a step count
  CHECK(r.total_steps == 0);
  CHECK(r.world == 0);
  CHECK(r.strategy == "zero2");  // the summary's 3 is not text: run.json's
  CHECK(r.final_loss == Approx(2.0));  // the last logged loss stands
  CHECK(r.final_val == Approx(2.7));
  CHECK(r.duration_s == 0);
  const std::string w = joined(r.warnings);
  CHECK_THAT(w, Catch::Contains("summary.json: \"steps\" is 1e+300, not a step count (a whole number from 0 to 2^53); ignored"));
  CHECK_THAT(w, Catch::Contains("run.json: \"total_steps\" is 1e+300") && Catch::Contains("run.json: \"world_size\" is \"four\"") &&
                    Catch::Contains("summary.json: \"world_size\" is 1099511627776, not a world size") &&
                    Catch::Contains("summary.json: \"strategy\" is 3, not text") &&
                    Catch::Contains("summary.json: \"final_loss\" is \"low\"") &&
                    Catch::Contains("summary.json: \"final_val.loss\" is \"high\"") &&
                    Catch::Contains("run.json: \"started\" is -5"));
  CHECK_THAT(runs_table({r}), !Catch::Contains("-9223372036854775808"));

  write(d / "summary.json", "{\"steps\": ");
  const Run cut = read_run(d.string(), "x", never_alive);
  CHECK(cut.state == "failed");  // read as absent
  CHECK_THAT(joined(cut.warnings), Catch::Contains("summary.json: not JSON (syntax error at byte") && Catch::Contains("read as absent"));
}

TEST_CASE("runs: escape sequences in names and values never leave as raw bytes", "[runs][hostile]") {
  TempDir t("mtrain_test_catalog");
  const std::string osc = "\x1b]0;owned\x07";
  const fs::path d = make_run(t.path / ("exp" + osc), "20261123_150401", kInfo,
                              "{\"mode\": \"train\", \"step\": \"" + osc + "\", \"loss\": 1}\n"  // raw: not JSON
                              R"({"mode": "train", "step": "\u001b]0;owned\u0007", "loss": 1})" "\n" + kMetrics,
                              json{{"strategy", "ddp" + osc}, {"stopped_by", "SIG" + osc}, {"model", "\xc2\x9b" "2J"}});
  std::vector<std::string> skipped;
  const auto runs = list_runs(t.path.string(), &skipped);
  REQUIRE(runs.size() == 1);
  CHECK(runs[0].strategy == "ddp" + osc);  // kept as data
  const std::string table = runs_table(runs);
  CHECK(table.find('\x1b') == std::string::npos);
  CHECK(table.find('\x07') == std::string::npos);
  CHECK_THAT(table, Catch::Contains("exp^[]0;owned^G/20261123_150401") && Catch::Contains("ddp^[]0;owned^G") &&
                        Catch::Contains("stopped (SIG^[]0;owned^G)"));
  const std::string w = joined(runs[0].warnings);
  CHECK(w.find('\x1b') == std::string::npos);
  CHECK_THAT(w, Catch::Contains("exp^[]0;owned^G/20261123_150401/metrics.jsonl:1: not JSON") &&
                    Catch::Contains("exp^[]0;owned^G/20261123_150401/metrics.jsonl:2: \"step\" is \"\\u001b]0;owned\\u0007\""));

  // JSON: the same values, every control written as an escape (C1 and DEL too, which JSON itself
  // would leave raw), bytes that are not UTF-8 replaced instead of aborting the dump.
  Run odd = runs[0];
  odd.name = std::string("bad\xff") + "\x7f";
  const std::string text = runs_json_text(runs_json({odd}, false));
  CHECK(text.find('\x1b') == std::string::npos);
  CHECK(text.find('\x7f') == std::string::npos);
  CHECK(text.find("\xc2\x9b") == std::string::npos);
  CHECK_THAT(text, Catch::Contains(R"(\u001b]0;owned\u0007)") && Catch::Contains(R"(\u009b2J)") && Catch::Contains(R"(\u007f)"));
  const json back = json::parse(text);
  CHECK(back["runs"][0]["strategy"] == "ddp" + osc);
  CHECK(back["runs"][0]["model"] == "\xc2\x9b" "2J");
  CHECK(back["runs"][0]["run"] == "bad\xef\xbf\xbd\x7f");
  // A well-formed listing is dump(2) byte for byte.
  const json plain = runs_json({}, false);
  CHECK(runs_json_text(plain) == plain.dump(2));
}

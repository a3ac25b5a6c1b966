// The failure report (lib/launch/report.cpp): the root-cause rank first with its exit, cause,
// error file and stderr tail, then one line per other failed rank; an external stop names the
// reason and every rank it stopped. Everything a rank wrote is shown with controls visible.
#include <catch2/catch.hpp>

#include <fstream>

#include "lib/core/error_file.hpp"
#include "lib/launch/report.hpp"
#include "temp_dir.hpp"

using namespace mtrain;
using namespace mtrain::launch;

namespace {
plan::LaunchPlan one_node_plan() {
  plan::LaunchPlan p;
  p.job_id = "job-7";
  p.nodes.push_back(plan::Node{"node-a", 0, {}, {}});
  return p;
}
RankFailure rank_failure(int rank, int code) {
  RankFailure r;
  r.host = "node-a";
  r.rank = rank;
  r.local_rank = rank;
  r.pid = 1000 + rank;
  r.status.code = code;
  r.elapsed_s = 1.234;
  return r;
}
}  // namespace

TEST_CASE("report: the root cause rank with its exit, elapsed time and stderr tail", "[launch][report]") {
  Failure f;
  f.root = rank_failure(1, 3);
  f.root.stderr_tail = {"Traceback (most recent call last):", "ValueError: bad"};
  const std::string out = format_report(one_node_plan(), f, 2, 3);
  CHECK(out ==
        "mtrain: job job-7 failed on attempt 2 (max restarts 3)\n"
        "root cause (first rank to fail):\n"
        "  host:       node-a\n"
        "  rank:       1 (local rank 1)\n"
        "  pid:        1001\n"
        "  exit:       exit code 3\n"
        "  elapsed:    1.23 s\n"
        "  last 2 lines of stderr:\n"
        "    Traceback (most recent call last):\n"
        "    ValueError: bad\n");
}

TEST_CASE("report: an empty stderr, a cause, the error-file rule and the other ranks", "[launch][report]") {
  Failure f;
  f.root = rank_failure(0, 0);
  f.root.status.signaled = true;
  f.root.status.code = 9;
  f.cause = "no progress for 30 s";
  f.first_by_error_file = "rank 0 wrote its error file first";
  RankFailure other = rank_failure(1, 1);
  other.stopped_by_launcher = true;
  f.others = {other, rank_failure(2, 4)};
  const std::string out = format_report(one_node_plan(), f, 0, 0);
  CHECK_THAT(out, Catch::Contains("  exit:       signal SIGKILL (9)\n"));
  CHECK_THAT(out, Catch::Contains("  cause:      no progress for 30 s\n"));
  CHECK_THAT(out, Catch::Contains("  first:      rank 0 wrote its error file first\n"));
  CHECK_THAT(out, Catch::Contains("  stderr:     (empty)\n"));
  CHECK_THAT(out, Catch::EndsWith("other failed ranks:\n"
                                  "  rank 1 (local rank 1, host node-a, pid 1001): exit code 1 (stopped by mtrain "
                                  "during teardown)\n"
                                  "  rank 2 (local rank 2, host node-a, pid 1002): exit code 4\n"));
}

TEST_CASE("report: the error file's message, one indented line per line, controls visible", "[launch][report]") {
  testing::TempDir dir("mtrain_report");
  const std::string path = (dir.path / "error.json").string();
  ErrorRecord rec;
  rec.message = "first line\nsecond \x1b[2J line";
  rec.rank = 0;
  std::ofstream(path) << error_file_text(rec);
  Failure f;
  f.root = rank_failure(0, 1);
  f.root.error_file = path;
  f.root.stderr_tail = {"bell\x07"};
  const std::string out = format_report(one_node_plan(), f, 0, 0);
  CHECK_THAT(out, Catch::Contains("  error file: " + path + "\n    first line\n    second ^[[2J line\n"));
  CHECK_THAT(out, Catch::Contains("    bell^G\n"));

  // Issue 45: without --log-dir the file is in the launcher's temporary folder, removed before
  // the report is read: its message is quoted, its path not named.
  f.root.error_file_removed = true;
  const std::string gone = format_report(one_node_plan(), f, 0, 0);
  CHECK_THAT(gone, Catch::Contains("  error file: (in the launcher's temporary folder, removed; --log-dir keeps it)\n    first line\n"));
  CHECK_THAT(gone, !Catch::Contains(path));
  f.root.error_file_removed = false;

  // A file that is not an error record, or is missing, adds nothing.
  std::ofstream(path) << "not json";
  CHECK_THAT(format_report(one_node_plan(), f, 0, 0), !Catch::Contains("error file:"));
  f.root.error_file = (dir.path / "missing.json").string();
  CHECK_THAT(format_report(one_node_plan(), f, 0, 0), !Catch::Contains("error file:"));
}

TEST_CASE("report: an external stop names the reason and every stopped rank", "[launch][report]") {
  Failure f;
  f.external = true;
  f.cause = "node 1 failed\x1b]0;title\x07";
  RankFailure r0 = rank_failure(0, 0);
  r0.status.signaled = true;
  r0.status.code = 15;
  f.others = {r0};
  CHECK(format_report(one_node_plan(), f, 1, 2) ==
        "mtrain: job job-7 stopped on node-a (attempt 1): node 1 failed^[]0;title^G\n"
        "  rank 0 (local rank 0, pid 1000): signal SIGTERM (15)\n");
  plan::LaunchPlan no_nodes = one_node_plan();
  no_nodes.nodes.clear();
  CHECK_THAT(format_report(no_nodes, f, 1, 2), Catch::StartsWith("mtrain: job job-7 stopped on this node "));
}

TEST_CASE("report: print_report writes exactly the formatted text", "[launch][report]") {
  testing::TempDir dir("mtrain_report");
  const auto path = dir.path / "out.txt";
  Failure f;
  f.root = rank_failure(0, 2);
  std::FILE* out = std::fopen(path.c_str(), "w");
  REQUIRE(out);
  print_report(out, one_node_plan(), f, 0, 1);
  std::fclose(out);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text == format_report(one_node_plan(), f, 0, 1));
}

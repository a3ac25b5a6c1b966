// What Slurm says about a job (lib/slurm/job_status.cpp): the three parsers over each command's
// output, exit codes, terminal states, the readable line and Slurm's file-name patterns.
#include <catch2/catch.hpp>

#include "lib/slurm/job_status.hpp"

using namespace mtrain::slurm;

TEST_CASE("job_status: exit codes are code:signal", "[slurm][job_status]") {
  JobStatus st;
  parse_exit_code("3:0", st);
  CHECK(st.exit_code == 3);
  CHECK(st.signal == 0);
  parse_exit_code(" 0:15 ", st);
  CHECK(st.exit_code == 0);
  CHECK(st.signal == 15);
  JobStatus none;
  parse_exit_code("", none);
  parse_exit_code("x:y", none);
  CHECK(none.exit_code == -1);
  CHECK(none.signal == 0);
}

TEST_CASE("job_status: terminal states and the readable line", "[slurm][job_status]") {
  for (const std::string s : {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
                              "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"}) {
    JobStatus st;
    st.state = s;
    CHECK(st.terminal());
  }
  JobStatus st;
  for (const std::string s : {"PENDING", "RUNNING", "COMPLETING", "SUSPENDED", ""}) {
    st.state = s;
    CHECK_FALSE(st.terminal());
  }
  st.state = "";
  CHECK(st.readable() == "UNKNOWN");
  st.state = "PENDING";
  st.reason = "Resources";
  CHECK(st.readable() == "PENDING (Resources)");
  st.reason = "None";
  CHECK(st.readable() == "PENDING");
  st.state = "RUNNING";
  st.nodes = "n[1-2]";
  st.elapsed = "1:02";
  CHECK(st.readable() == "RUNNING on n[1-2] for 1:02");
  st.state = "COMPLETED";
  st.exit_code = 0;
  CHECK(st.readable() == "COMPLETED, exit code 0");
  st.state = "CANCELLED";  // a cancelled job's 0 says nothing
  CHECK(st.readable() == "CANCELLED");
  st.signal = 9;
  CHECK(st.readable() == "CANCELLED, killed by signal 9");
  const auto j = st.to_json();
  CHECK(j["terminal"] == true);
  CHECK(j["signal"] == 9);
  CHECK(j["exit_code"] == 0);
  st.exit_code = -1;
  CHECK(st.to_json()["exit_code"].is_null());
}

TEST_CASE("job_status: squeue lines, the job name keeps separators", "[slurm][job_status]") {
  const std::string out = std::string("41") + kSep + "RUNNING" + kSep + "None" + kSep + "n1" + kSep + "0:01" + kSep +
                          "other\n" + " 42" + kSep + "PENDING" + kSep + "Priority" + kSep + "" + kSep + "0:00" + kSep +
                          "a" + kSep + "b\n";
  auto st = parse_squeue(out, "42");
  REQUIRE(st);
  CHECK(st->state == "PENDING");
  CHECK(st->reason == "Priority");
  CHECK(st->name == std::string("a") + kSep + "b");
  CHECK(st->source == "squeue");
  CHECK_FALSE(parse_squeue(out, "43"));
  CHECK_FALSE(parse_squeue("42|RUNNING\n", "42"));  // too few fields
}

TEST_CASE("job_status: sacct keeps the allocation line, the last when requeued", "[slurm][job_status]") {
  const std::string out =
      "7|NODE_FAIL|0:0|n1|00:01:00|train\n"
      "7.batch|FAILED|1:0|n1|00:01:00|batch\n"
      "7|CANCELLED by 0|0:15|n2|00:00:30|train|x\n";
  auto st = parse_sacct(out, "7");
  REQUIRE(st);
  CHECK(st->state == "CANCELLED");
  CHECK(st->signal == 15);
  CHECK(st->nodes == "n2");
  CHECK(st->elapsed == "00:00:30");
  CHECK(st->name == "train|x");
  CHECK_FALSE(parse_sacct(out, "8"));
  CHECK_FALSE(parse_sacct("", "7"));
}

TEST_CASE("job_status: scontrol values may hold spaces", "[slurm][job_status]") {
  const std::string out =
      "JobId=12 JobName=my job UserId=u(1) JobState=FAILED Reason=NonZeroExitCode ExitCode=2:0 RunTime=00:00:05 "
      "NodeList=(null) StdErr=/o/err 12.txt StdOut=/o/out 12.txt\n";
  auto st = parse_scontrol(out, "12");
  REQUIRE(st);
  CHECK(st->name == "my job");
  CHECK(st->state == "FAILED");
  CHECK(st->reason == "NonZeroExitCode");
  CHECK(st->exit_code == 2);
  CHECK(st->nodes.empty());
  CHECK(st->elapsed == "00:00:05");
  CHECK(st->stdout_path == "/o/out 12.txt");
  CHECK(st->stderr_path == "/o/err 12.txt");
  CHECK(st->source == "scontrol");
  CHECK_FALSE(parse_scontrol(out, "13"));
  CHECK_FALSE(parse_scontrol("slurm_load_jobs error: Invalid job id specified", "12"));
}

TEST_CASE("file patterns expand like Slurm's", "[slurm][job_status]") {
  CHECK(expand_file_pattern("/o/%x-%j.%%.out", "12", "nm", "u") == "/o/nm-12.%.out");
  CHECK(expand_file_pattern("%u/%A_%a", "3", "n", "bob") == "bob/3_%a");
  CHECK(expand_file_pattern("%J.out%", "5", "n", "u") == "5.out%");  // a trailing % stays
}

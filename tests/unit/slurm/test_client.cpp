#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/slurm/client.hpp"

using namespace mtrain::slurm;

namespace {
CommandResult ok(std::string out) {
  CommandResult r;
  r.exit_code = 0;
  r.out = std::move(out);
  return r;
}
CommandResult fail(int code, std::string err) {
  CommandResult r;
  r.exit_code = code;
  r.err = std::move(err);
  return r;
}
std::string sq(const std::string& id, const std::string& state, const std::string& name) {
  return id + kSep + state + kSep + "None" + kSep + "n1" + kSep + "0:05" + kSep + name + "\n";
}
}  // namespace

TEST_CASE("client: sbatch --parsable answers are parsed", "[slurm][client]") {
  FakeRunner run([](const std::vector<std::string>& a) { return a[0] == "sbatch" ? ok("1234;clusterA\n") : fail(1, ""); });
  SlurmClient c(run);
  auto s = c.submit("/tmp/x.sbatch");
  CHECK(s.job_id == "1234");
  CHECK(s.cluster == "clusterA");
  CHECK(run.calls[0] == std::vector<std::string>{"sbatch", "--parsable", "/tmp/x.sbatch"});
}

TEST_CASE("client: sbatch missing or refusing is a clear error", "[slurm][client]") {
  FakeRunner missing([](const std::vector<std::string>&) {
    CommandResult r;
    r.not_found = true;
    r.errno_text = "No such file or directory";
    return r;
  });
  SlurmClient c(missing);
  CHECK_THROWS_WITH(c.submit("/tmp/x"), Catch::Contains("cannot run sbatch") && Catch::Contains("slurm-client"));

  FakeRunner refuse([](const std::vector<std::string>& a) {
    if (a[0] == "sinfo") return ok("debug\ngpu\n");
    return fail(1, "sbatch: error: invalid partition specified: nope\nsbatch: error: Batch job submission failed");
  });
  SlurmClient c2(refuse);
  try {
    c2.submit("/tmp/x");
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.paragraph(), Catch::Contains("invalid partition specified: nope"));
    CHECK_THAT(e.paragraph(), Catch::Contains("Partitions here: debug, gpu"));
    CHECK(e.exit_code() == 2);
  }
  FakeRunner garbage([](const std::vector<std::string>&) { return ok("Submitted batch job 5\n"); });
  SlurmClient c3(garbage);
  CHECK_THROWS_WITH(c3.submit("/tmp/x"), Catch::Contains("not a job id"));
}

TEST_CASE("client: status of a running job comes from squeue", "[slurm][client]") {
  FakeRunner run([](const std::vector<std::string>& a) {
    if (a[0] == "squeue") return ok(sq("77", "RUNNING", "my|job name"));
    if (a[0] == "scontrol")
      return ok("JobId=77 JobName=my|job name UserId=root(0) JobState=RUNNING Reason=None ExitCode=0:0 "
                "StdErr=/w/out 77.txt StdIn=/dev/null StdOut=/w/out 77.txt Power=");
    return fail(1, "unexpected");
  });
  SlurmClient c(run);
  auto st = c.status("77");
  CHECK(st.state == "RUNNING");
  CHECK(st.name == "my|job name");
  CHECK(st.stdout_path == "/w/out 77.txt");
  CHECK(st.readable() == "RUNNING on n1 for 0:05");
  CHECK_FALSE(st.terminal());
}

TEST_CASE("client: finished job falls back to sacct -c when accounting is off", "[slurm][client]") {
  FakeRunner run([](const std::vector<std::string>& a) {
    if (a[0] == "squeue") return fail(1, "slurm_load_jobs error: Invalid job id specified");
    if (a[0] == "sacct" && a[1] != "-c")
      return fail(1, "sacct: error: Slurm accounting storage is disabled");
    if (a[0] == "sacct") return ok("88|FAILED|3:0|n1|00:00:02|train\n88.batch|FAILED|3:0|n1|00:00:02|batch\n");
    return fail(1, "slurm_load_jobs error: Invalid job id specified");
  });
  SlurmClient c(run);
  auto st = c.status("88");
  CHECK(st.state == "FAILED");
  CHECK(st.exit_code == 3);
  CHECK(st.source == "sacct -c");
  CHECK(st.readable() == "FAILED, exit code 3");
}

TEST_CASE("client: squeue's ended job gets its exit code from scontrol", "[slurm][client]") {
  FakeRunner run([](const std::vector<std::string>& a) {
    if (a[0] == "squeue") return ok(sq("9", "CANCELLED", "x"));
    if (a[0] == "sacct") return fail(1, "sacct: error: Slurm accounting storage is disabled");
    return ok("JobId=9 JobName=x JobState=CANCELLED Reason=None ExitCode=0:15 RunTime=00:00:03 StdOut=/o");
  });
  SlurmClient c(run);
  auto st = c.status("9");
  CHECK(st.signal == 15);
  CHECK(st.readable() == "CANCELLED, killed by signal 15");
  CHECK(st.to_json()["signal"] == 15);
}

TEST_CASE("client: unknown jobs and bad ids", "[slurm][client]") {
  FakeRunner none([](const std::vector<std::string>&) { return fail(1, "Invalid job id specified"); });
  SlurmClient c(none);
  CHECK_THROWS_WITH(c.status("123"), Catch::Contains("Slurm knows no job 123"));
  CHECK_THROWS_WITH(c.status("12; rm -rf /"), Catch::Contains("not a Slurm job id"));
  CHECK_THROWS_WITH(c.cancel("abc"), Catch::Contains("not a Slurm job id"));
}

TEST_CASE("client: cancel checks the job and shows scancel's refusal", "[slurm][client]") {
  FakeRunner run([](const std::vector<std::string>& a) {
    if (a[0] == "squeue") return ok(sq("5", "RUNNING", "x"));
    if (a[0] == "scancel") return fail(1, "scancel: Terminating job 5\nscancel: error: Kill job error on job id 5: Access/permission denied");
    return ok("");
  });
  SlurmClient c(run);
  CHECK_THROWS_WITH(c.cancel("5", "USR1"), Catch::Contains("Access/permission denied"));
  CHECK(run.calls.back() == std::vector<std::string>{"scancel", "-v", "--signal=USR1", "5"});
}

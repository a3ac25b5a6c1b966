// `mtrain slurm task PROGRAM` (lib/slurm/task_exec.cpp): inside an allocation it sets the torchrun
// variables Slurm's environment implies and becomes PROGRAM; outside one, without a program, or
// with a program that cannot start, it refuses. Each case runs in a forked child (it changes the
// environment and execs); the child reports through files and its exit status.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include "lib/core/error.hpp"
#include "lib/slurm/task_exec.hpp"
#include "temp_dir.hpp"

using namespace mtrain::slurm;
using mtrain::testing::TempDir;

namespace {

// Rank 5 of 8: the second task of the second node of `srun -N2 --ntasks-per-node=4`.
const std::map<std::string, std::string> kTask = {
    {"SLURM_JOB_ID", "4242"},         {"SLURM_JOB_NODELIST", "gpu[01-02]"},   {"SLURM_STEP_NODELIST", "gpu[01-02]"},
    {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"}, {"SLURM_STEP_NUM_TASKS", "8"},    {"SLURM_NTASKS", "8"},
    {"SLURM_NODEID", "1"},            {"SLURM_PROCID", "5"},                  {"SLURM_LOCALID", "1"},
    {"SLURM_CPUS_ON_NODE", "8"}};

// Runs `body` in a child with `env` added (and SLURM_JOB_ID removed first); the child writes
// the paragraph of an mtrain::Error to `error_file` and exits with its code.
int in_child(const std::map<std::string, std::string>& env, const std::string& error_file,
             const std::function<void()>& body) {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::unsetenv("SLURM_JOB_ID");
    ::unsetenv("OMP_NUM_THREADS");
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    try {
      body();
    } catch (const mtrain::Error& e) {
      std::ofstream(error_file) << e.paragraph();
      ::_exit(e.exit_code());
    }
    ::_exit(99);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("task_exec: a task becomes its program with the torchrun variables", "[slurm][task_exec]") {
  TempDir d("mtrain_task_exec");
  const std::string out = d.str() + "/env";
  const std::string err = d.str() + "/error";
  auto env = kTask;
  env["TMPDIR"] = d.str();
  const int rc = in_child(env, err, [&] {
    exec_as_rank({"/bin/sh", "-c",
                  "echo $RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $GROUP_RANK $OMP_NUM_THREADS "
                  "$TORCHELASTIC_ERROR_FILE > \"$0\"",
                  out},
                 {});
  });
  CHECK(rc == 0);
  CHECK(slurp(err).empty());
  // Ranks contiguous per node: node 1, local 1 is rank 5; 8 cores over 4 ranks; the error file
  // under $TMPDIR, named for the job.
  CHECK(slurp(out) == "5 1 8 4 1 2 " + d.str() + "/mtrain-4242-error-5.json\n");
}

TEST_CASE("task_exec: the user's OMP_NUM_THREADS wins", "[slurm][task_exec]") {
  TempDir d("mtrain_task_exec");
  const std::string out = d.str() + "/omp";
  auto env = kTask;
  env["OMP_NUM_THREADS"] = "7";
  CHECK(in_child(env, d.str() + "/error", [&] {
          exec_as_rank({"/bin/sh", "-c", "echo $OMP_NUM_THREADS > \"$0\"", out}, {});
        }) == 0);
  CHECK(slurp(out) == "7\n");
}

TEST_CASE("task_exec: refusals outside an allocation, without a program, or when it cannot start",
          "[slurm][task_exec]") {
  TempDir d("mtrain_task_exec");
  const std::string err = d.str() + "/error";
  CHECK(in_child({}, err, [] { exec_as_rank({"/bin/true"}, {}); }) == 2);
  CHECK_THAT(slurp(err), Catch::Contains("not inside a Slurm job") && Catch::Contains("srun"));
  CHECK(in_child(kTask, err, [] { exec_as_rank({}, {}); }) == 2);
  CHECK_THAT(slurp(err), Catch::Contains("no program to run"));
  CHECK(in_child(kTask, err, [&] { exec_as_rank({d.str() + "/no-such-program"}, {}); }) == 127);
  CHECK_THAT(slurp(err), Catch::Contains("cannot run '" + d.str() + "/no-such-program'") &&
                             Catch::Contains("No such file"));
}

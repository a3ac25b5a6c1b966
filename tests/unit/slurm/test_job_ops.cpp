// The `mtrain slurm` operations (lib/slurm/job_ops.cpp) over a fake Slurm: submit writes the
// script, its output folders and a record that `logs` reads once the controller has forgotten
// the job; logs prints whole lines, one rank's with --rank; the state folder's fallbacks.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"
#include "lib/slurm/job_ops.hpp"
#include "temp_dir.hpp"

using namespace mtrain::slurm;
namespace fs = std::filesystem;
using mtrain::testing::TempDir;

namespace {

CommandResult answer(int code, std::string out) {
  CommandResult r;
  r.exit_code = code;
  r.out = std::move(out);
  return r;
}

// sbatch accepts as job 55; the job has ended and only accounting knows it (no output paths).
CommandResult ended_job_55(const std::vector<std::string>& a) {
  if (a[0] == "sbatch") return answer(0, "55\n");
  if (a[0] == "sacct" && a[1] != "-c") return answer(0, "55|COMPLETED|0:0|n1|00:00:02|train\n");
  return answer(1, "");
}

// Sets an environment variable for one scope, restoring the old value after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::vector<std::string> logs(SlurmClient& c, const std::string& state_dir, LogOptions opt = {}) {
  std::vector<std::string> lines;
  show_logs(c, "55", opt, state_dir, [&](const std::string& l) { lines.push_back(l); });
  return lines;
}

}  // namespace

TEST_CASE("job_ops: a labelled line belongs to its rank", "[slurm][job_ops]") {
  CHECK(line_is_rank("0: hello", 0));
  CHECK(line_is_rank("  12: x", 12));
  CHECK_FALSE(line_is_rank("12: x", 1));
  CHECK_FALSE(line_is_rank("1", 1));
  CHECK_FALSE(line_is_rank(": x", 0));
  CHECK_FALSE(line_is_rank("step 1: loss", 1));
  CHECK_FALSE(line_is_rank("", 0));
}

TEST_CASE("job_ops: the state folder's fallbacks", "[slurm][job_ops]") {
  {
    ScopedEnv s("MTRAIN_SLURM_STATE", "/s/state");
    CHECK(default_state_dir() == "/s/state");
  }
  ScopedEnv s("MTRAIN_SLURM_STATE", "");
  {
    ScopedEnv x("XDG_CACHE_HOME", "/x/cache");
    CHECK(default_state_dir() == "/x/cache/mtrain/slurm");
  }
  ScopedEnv x("XDG_CACHE_HOME", nullptr);
  {
    ScopedEnv h("HOME", "/home/u");
    CHECK(default_state_dir() == "/home/u/.cache/mtrain/slurm");
  }
  ScopedEnv h("HOME", nullptr);
  ScopedEnv u("USER", "bob");
  CHECK(default_state_dir() == "/tmp/mtrain-slurm-bob");
}

TEST_CASE("job_ops: output folders are made, relative to --chdir, patterns left alone", "[slurm][job_ops]") {
  TempDir dir("mtrain_job_ops");
  JobOptions j;
  j.chdir = "work";
  j.output = "logs/out-%j.txt";
  j.error = (dir.path / "abs" / "err.txt").string();
  make_output_folders(j, dir.path.string());
  CHECK(fs::is_directory(dir.path / "work" / "logs"));
  CHECK(fs::is_directory(dir.path / "abs"));
  j.chdir.clear();
  j.output = "per-%j/out.txt";
  j.error.clear();
  make_output_folders(j, dir.path.string());
  CHECK_FALSE(fs::exists(dir.path / "per-%j"));
  // A folder that cannot be made is an error naming it.
  std::ofstream(dir.path / "file") << "x";
  j.output = (dir.path / "file" / "sub" / "out.txt").string();
  CHECK_THROWS_WITH(make_output_folders(j, dir.path.string()), Catch::Contains("cannot create the output folder"));
}

TEST_CASE("job_ops: submit writes the script and a record logs can use", "[slurm][job_ops]") {
  TempDir dir("mtrain_job_ops");
  JobOptions j;
  j.job_name = "train";
  j.mtrain = "/usr/bin/mtrain";
  finalize(j, dir.path.string());  // output <dir>/mtrain-slurm/%x-%j.out
  FakeRunner run(ended_job_55);
  SlurmClient client(run);
  const std::string state = (dir.path / "state").string();
  const std::string script = (dir.path / "scripts" / "job.sbatch").string();
  const Submitted s = submit_job(j, ScriptContext{"TEST", "mtrain slurm submit"}, script, client, state);
  CHECK(s.job_id == "55");
  CHECK(s.script_path == script);
  CHECK(run.calls.at(0) == std::vector<std::string>{"sbatch", "--parsable", script});
  REQUIRE(fs::exists(script));
  CHECK((fs::status(script).permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK(fs::is_directory(dir.path / "mtrain-slurm"));
  std::ifstream rec_in(fs::path(state) / "55.json");
  const auto rec = nlohmann::json::parse(rec_in);
  CHECK(rec["output"] == (dir.path / "mtrain-slurm" / "train-55.out").string());
  CHECK(rec["script"] == script);

  // The controller has forgotten the output path: logs reads the record.
  std::ofstream(dir.path / "mtrain-slurm" / "train-55.out") << "0: rank zero\n1: rank one\nunlabelled";
  CHECK(logs(client, state) == std::vector<std::string>{"0: rank zero", "1: rank one", "unlabelled"});
  LogOptions one;
  one.rank = 1;
  CHECK(logs(client, state, one) == std::vector<std::string>{"1: rank one"});
  LogOptions follow;
  follow.follow = true;  // an ended job: everything, then return its final status
  std::vector<std::string> lines;
  const JobStatus st = show_logs(client, "55", follow, state, [&](const std::string& l) { lines.push_back(l); });
  CHECK(st.state == "COMPLETED");
  CHECK(lines.size() == 3);
}

TEST_CASE("job_ops: logs without any output file is a clear error", "[slurm][job_ops]") {
  TempDir dir("mtrain_job_ops");
  FakeRunner run(ended_job_55);
  SlurmClient client(run);
  LogOptions errors;
  errors.errors = true;
  CHECK_THROWS_WITH(logs(client, (dir.path / "none").string(), errors), Catch::Contains("the output of job 55 is not at"));
}

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/slurm/command.hpp"
#include "lib/slurm/script.hpp"

using namespace mtrain::slurm;
namespace fs = std::filesystem;

namespace {

const ScriptContext kCtx{"TEST", "mtrain slurm script"};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compare with tests/data/slurm/<name>; MTRAIN_UPDATE_GOLDEN=1 rewrites the file instead.
void check_golden(const std::string& name, const std::string& text) {
  fs::path p = fs::path(MTRAIN_SOURCE_DIR) / "tests/data/slurm" / name;
  if (std::getenv("MTRAIN_UPDATE_GOLDEN")) std::ofstream(p, std::ios::binary) << text;
  REQUIRE(fs::exists(p));
  CHECK(slurp(p) == text);
}

JobOptions agent_job() {
  JobOptions j;
  j.job_name = "gpt 2x8";
  j.partition = "gpu";
  j.nodes = 2;
  j.gpus_per_node = 8;
  j.cpus_per_task = 6;
  j.mem = "480G";
  j.time = "1-00:00:00";
  j.account = "proj-42";
  j.qos = "high";
  j.constraint = "a100&ib";
  j.exclusive = true;
  j.requeue = true;
  j.exports = {"ALL", "NCCL_DEBUG=INFO"};
  j.sbatch_lines = {"--mail-type=END"};
  j.setup = {"module load cuda/12.1", "source /opt/venv/bin/activate"};
  j.config = "/work/jobs/gpt.yaml";
  j.mtrain = "/opt/mtrain/bin/mtrain";
  finalize(j, "/work");
  return j;
}

}  // namespace

TEST_CASE("golden: one agent per node, every option", "[slurm][script]") {
  check_golden("agent-2x8.sbatch", render_script(agent_job(), kCtx));
}

TEST_CASE("golden: one task per GPU with a program", "[slurm][script]") {
  JobOptions j;
  j.pattern = Pattern::TaskPerGpu;
  j.ntasks_per_node = 2;
  j.signal = "USR2@30";
  j.mtrain = "/usr/local/bin/mtrain";
  j.program = {"/usr/bin/python3", "train.py", "--launcher", "pytorch"};
  finalize(j, "/home/u/proj");
  check_golden("task-1x2.sbatch", render_script(j, kCtx));
}

TEST_CASE("golden: defaults, bundled trainer", "[slurm][script]") {
  JobOptions j;
  j.mtrain = "/usr/bin/mtrain";
  finalize(j, "/w");
  check_golden("agent-default.sbatch", render_script(j, kCtx));
}

TEST_CASE("sbatch values are quoted for sbatch's own parser", "[slurm][script]") {
  CHECK(sbatch_quote("gpu") == "gpu");
  CHECK(sbatch_quote("a b") == "\"a b\"");
  CHECK(sbatch_quote("it's \"x\" \\ #1") == "\"it's \\\"x\\\" \\\\ #1\"");
  CHECK_THROWS_WITH(sbatch_quote("a\nb"), Catch::Contains("line break"));
}

TEST_CASE("templates: unknown placeholders are errors naming the line", "[slurm][script]") {
  CHECK(fill_template("a {{X}} b", {{"X", "1"}}, "t") == "a 1 b");
  CHECK_THROWS_WITH(fill_template("ok\n{{NOPE}}", {{"X", "1"}}, "my.tpl"), Catch::Contains("my.tpl:2") && Catch::Contains("NOPE"));
  CHECK_THROWS_WITH(fill_template("{{X", {{"X", "1"}}, "t"), Catch::Contains("never closed"));
}

// Hostile strings go through the generated script under bash, with a fake srun and a fake mtrain
// (in a folder whose own name is hostile): they must arrive byte for byte and never execute.
TEST_CASE("generated scripts pass hostile strings intact through bash", "[slurm][script]") {
  const std::vector<std::string> hostile = {
      "a b", "it's", "\"dq\"", "$(touch PWNED1)", "`touch PWNED2`", "; touch PWNED3", "$HOME",
      "back\\slash", "*", "", "--", "new\nline", "tab\tx", "&& touch PWNED4 ||", "'; touch PWNED5; '"};
  fs::path dir = fs::temp_directory_path() / ("mtrain-quote-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::path bin = dir / "bin $(touch PWNED0) it's";
  fs::create_directories(bin);
  std::ofstream(bin / "srun") << "#!/bin/bash\n"
                                 "while [ $# -gt 0 ]; do case \"$1\" in --*) shift;; *) break;; esac; done\n"
                                 "exec \"$@\"\n";
  std::ofstream(bin / "mtrain") << "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$OUTFILE\"\nprintf '%s' \"$HOSTILE\" > \"$OUTFILE.env\"\n";
  fs::permissions(bin / "srun", fs::perms::owner_all);
  fs::permissions(bin / "mtrain", fs::perms::owner_all);

  for (auto pattern : {Pattern::TaskPerGpu, Pattern::AgentPerNode}) {
    JobOptions j;
    j.pattern = pattern;
    j.mtrain = (bin / "mtrain").string();
    j.job_name = "name $(touch PWNED6) 'q' \"d\"";
    j.program = {"prog"};
    for (const auto& h : hostile) j.program.push_back(h);
    if (pattern == Pattern::AgentPerNode) j.launch_args = {"--opt", "$(touch PWNED7)", "x y"};
    j.exports = {"HOSTILE=$(touch PWNED8); `x` 'y' \"z\" \\"};
    j.program.erase(std::remove(j.program.begin(), j.program.end(), "new\nline"), j.program.end());
    finalize(j, dir.string());
    fs::path script = dir / "job.sbatch";
    std::ofstream(script) << render_script(j, kCtx);
    fs::path out = dir / "args";
    fs::remove(out);
    SystemRunner run;
    auto r = run.run({"env", "-i", "PATH=" + bin.string() + ":/usr/bin:/bin", "SLURM_JOB_ID=1",
                      "SLURM_JOB_NODELIST=n1", "SLURM_JOB_NUM_NODES=1", "OUTFILE=" + out.string(), "bash",
                      "-c", "cd \"$1\" && exec bash job.sbatch", "sh", dir.string()},
                     30);
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    std::string raw = slurp(out);
    std::vector<std::string> got;
    size_t i = 0;
    while (i < raw.size()) {
      size_t z = raw.find('\0', i);
      got.push_back(raw.substr(i, z - i));
      i = z + 1;
    }
    std::vector<std::string> want;
    if (pattern == Pattern::TaskPerGpu) {
      want = {"slurm", "task"};
    } else {
      want = {"launch", "--nproc-per-node=1", "--opt", "$(touch PWNED7)", "x y", "--"};
    }
    want.insert(want.end(), j.program.begin(), j.program.end());
    CHECK(got == want);
    CHECK(slurp(fs::path(out.string() + ".env")) == "$(touch PWNED8); `x` 'y' \"z\" \\");
  }
  for (auto& e : fs::recursive_directory_iterator(dir))
    CHECK(e.path().filename().string().rfind("PWNED", 0) == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an elastic job (--nnodes MIN:MAX) outlives a lost node", "[slurm][script]") {
  JobOptions j;
  j.nodes = 3;
  j.mtrain = "/opt/mtrain/bin/mtrain";
  j.launch_args = {"--nnodes", "2:3", "--max-restarts", "3"};
  finalize(j, "/work");
  const std::string text = render_script(j, kCtx);
  CHECK_THAT(text, Catch::Contains("#SBATCH --no-kill"));
  CHECK_THAT(text, Catch::Contains("--kill-on-bad-exit=0 --no-kill"));
  CHECK_THAT(text, Catch::Contains("ELASTIC=1"));
  CHECK_THAT(text, Catch::Contains("export MTRAIN_RDZV_TOKEN"));
  // A fixed node count stays as before: one failed agent ends the step.
  j.launch_args = {"--nnodes=3:3"};
  const std::string fixed = render_script(j, kCtx);
  CHECK_THAT(fixed, !Catch::Contains("#SBATCH --no-kill") && !Catch::Contains("--kill-on-bad-exit=0 --no-kill") &&
                        Catch::Contains("--kill-on-bad-exit=1") &&
                        Catch::Contains("ELASTIC=0"));
  CHECK(elastic_in_launch_args({"--nnodes=1:4"}));
  CHECK_FALSE(elastic_in_launch_args({"--nnodes", "4"}));
}

TEST_CASE("an elastic job's MIN:MAX must fit the allocation", "[slurm][script]") {
  JobOptions j;
  j.nodes = 2;
  j.mtrain = "/opt/mtrain/bin/mtrain";
  j.launch_args = {"--nnodes", "3:4"};  // MIN above the allocation: it could never form
  CHECK_THROWS_WITH(finalize(j, "/work"), Catch::Contains("--nnodes 3:4 does not fit an allocation of --nodes 2"));
  j.nodes = 3;
  j.launch_args = {"--nnodes", "1:2"};  // a node beyond MAX would wait the whole job
  CHECK_THROWS_WITH(finalize(j, "/work"), Catch::Contains("does not fit"));
  j.nodes = 2;
  j.launch_args = {"--nnodes", "2:3"};
  CHECK_NOTHROW(finalize(j, "/work"));
}

#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "lib/config/registry.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/error.hpp"
#include "lib/slurm/job_options.hpp"
#include "lib/slurm/writer_job.hpp"

using namespace mtrain::slurm;
namespace fs = std::filesystem;
namespace config = mtrain::config;

namespace {
std::string write_yaml(const std::string& name, const std::string& text) {
  fs::path p = fs::temp_directory_path() / ("mtrain-slurm-test-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(p) << text;
  return p.string();
}

// The job `mtrain slurm script --config FILE --KEY VALUE…` writes: the settings resolved from the
// file and the flags (config::resolve_job), then the writer's job with finalize's checks.
JobOptions written(const std::string& file, const std::map<std::string, std::string>& flags = {}) {
  config::JobInputs in;
  in.job_file = file;
  in.flags = flags;
  in.user_file = (fs::temp_directory_path() / "mtrain-slurm-test-no-user-file.yaml").string();
  WriterWords w;
  w.config = file;
  w.self_path = "/usr/bin/mtrain";
  w.cwd = "/work";
  return writer_job(config::resolve_job(config::job_registry(), in).job, w);
}
}  // namespace

TEST_CASE("job file: the slurm section sets every option, flags override", "[slurm][options]") {
  auto path = write_yaml("ok.yaml",
                         "strategy: zero2\n"
                         "slurm:\n"
                         "  job_name: big run\n"
                         "  partition: gpu\n"
                         "  nodes: 2\n"
                         "  gpus-per-node: 8\n"
                         "  cpus_per_task: 6\n"
                         "  mem: 400G\n"
                         "  time: 2-00:00:00\n"
                         "  exclusive: true\n"
                         "  setup:\n"
                         "    - module load cuda/12.1\n"
                         "    - source ~/venv/bin/activate\n"
                         "  export: [NCCL_DEBUG=INFO, HOME]\n"
                         "  sbatch: --mail-type=END\n"
                         "  requeue: yes\n");
  const JobOptions j = written(path, {{"slurm.nodes", "4"}});  // a flag wins over the file
  CHECK(j.job_name == "big run");
  CHECK(j.nodes == 4);
  CHECK(j.gpus_per_node == 8);
  CHECK(j.ntasks_per_node == 8);
  CHECK(j.exclusive);
  CHECK(j.requeue);
  CHECK(j.setup == std::vector<std::string>{"module load cuda/12.1", "source ~/venv/bin/activate"});
  CHECK(j.exports == std::vector<std::string>{"NCCL_DEBUG=INFO", "HOME"});
  CHECK(j.sbatch_lines == std::vector<std::string>{"--mail-type=END"});
  CHECK(j.config == fs::absolute(path).string());
  CHECK(j.output == "/work/mtrain-slurm/%x-%j.out");
  fs::remove(path);
}

TEST_CASE("job file: unknown keys and bad values name file:line:column", "[slurm][options]") {
  auto path = write_yaml("bad.yaml", "slurm:\n  partition: gpu\n  partitoin: x\n");
  CHECK_THROWS_WITH(written(path), Catch::Contains(path + ":3:3") && Catch::Contains("Did you mean 'slurm.partition'"));
  auto path2 = write_yaml("bad2.yaml", "slurm:\n  nodes: many\n");
  CHECK_THROWS_WITH(written(path2), Catch::Contains(path2 + ":2:10") && Catch::Contains("nodes"));
  auto path3 = write_yaml("bad3.yaml", "slurm: [1, 2\n");
  CHECK_THROWS_WITH(written(path3), Catch::Contains(path3 + ":2:1") && Catch::Contains("not valid YAML"));
  CHECK_THROWS_WITH(written("/nonexistent/job.yaml"), Catch::Contains("/nonexistent/job.yaml"));
  for (auto& p : {path, path2, path3}) fs::remove(p);
}

TEST_CASE("options: values are checked", "[slurm][options]") {
  CHECK_THROWS_WITH(written("", {{"slurm.time", "1 hour"}}), Catch::Contains("time limit"));
  CHECK(written("", {{"slurm.time", "1-12:00:00"}}).time == "1-12:00:00");
  CHECK(written("", {{"slurm.time", "90"}}).time == "90");
  CHECK_THROWS_WITH(written("", {{"slurm.mem", "lots"}}), Catch::Contains("memory size"));
  CHECK_THROWS_WITH(written("", {{"slurm.signal", "USR1@soon"}}), Catch::Contains("SIGNAL[@SECONDS]"));
  CHECK(written("", {{"slurm.signal", "B:SIGUSR2@120"}}).signal == "USR2@120");
  CHECK(written("", {{"slurm.signal", "none"}, {"slurm.requeue", "false"}}).signal.empty());
  CHECK_THROWS_WITH(written("", {{"slurm.pattern", "mpi"}}), Catch::Contains("one of agent, task"));  // the registry's choice check
  CHECK_THROWS_WITH(written("", {{"slurm.job_name", "a\nb"}}), Catch::Contains("line break"));
  auto misspelt = write_yaml("misspelt.yaml", "slurm:\n  gpus-per-nod: 8\n");
  CHECK_THROWS_WITH(written(misspelt), Catch::Contains("Did you mean 'slurm.gpus_per_node'"));
  fs::remove(misspelt);
}

TEST_CASE("options: cross-field checks", "[slurm][options]") {
  JobOptions j;
  j.mtrain = "/usr/bin/mtrain";
  j.gpus_per_node = 4;
  j.ntasks_per_node = 8;
  CHECK_THROWS_WITH(finalize(j, "/w"), Catch::Contains("More tasks than the allocation has"));
  CHECK_THROWS_WITH(written("", {{"slurm.time", "1:00"}}),  // 60 s
                    Catch::Contains("fires 90 s before a time limit of only 60 s"));
  JobOptions t;
  t.mtrain = "/usr/bin/mtrain";
  t.pattern = Pattern::TaskPerGpu;
  CHECK_THROWS_WITH(finalize(t, "/w"), Catch::Contains("needs a PROGRAM"));
  t.program = {"python3", "x.py"};
  t.launch_args = {"--nproc-per-node=2"};
  CHECK_THROWS_WITH(finalize(t, "/w"), Catch::Contains("--pattern agent"));
  JobOptions g;
  g.mtrain = "/usr/bin/mtrain";
  g.gpus_per_node = 2;
  g.gres = "gpu:a100:2";
  CHECK_THROWS_WITH(finalize(g, "/w"), Catch::Contains("Use one"));
}

TEST_CASE("options: the ranks per node and the elastic node count in any spelling mtrain launch takes", "[slurm][options]") {
  for (const char* nproc : {"--nproc-per-node=4", "--nproc=4", "--nproc_per_node=4"}) {
    INFO(nproc);
    JobOptions j;
    j.mtrain = "/usr/bin/mtrain";
    j.launch_args = {nproc};
    finalize(j, "/w");
    CHECK(j.ntasks_per_node == 4);  // counted from the launch words
    JobOptions k = j;
    k.ntasks_per_node = 2;
    CHECK_THROWS_WITH(finalize(k, "/w"), Catch::Contains("disagree"));
  }
  CHECK(launch_arg_value({"--nproc_per_node", "gpu"}, "launch.nproc_per_node") == std::optional<std::string>("gpu"));
  CHECK_FALSE(launch_arg_value({"--nnodes", "2"}, "launch.nproc_per_node"));
  CHECK(elastic_in_launch_args({"--nnodes=2:3"}));
  CHECK_FALSE(elastic_in_launch_args({"--nnodes=3:3"}));
  CHECK_FALSE(elastic_in_launch_args({"--nnodes=3:x"}));  // not a node count: mtrain launch refuses it
  JobOptions e;
  e.mtrain = "/usr/bin/mtrain";
  e.nodes = 4;
  e.launch_args = {"--nnodes", "2:3"};
  CHECK_THROWS_WITH(finalize(e, "/w"), Catch::Contains("--nnodes 2:3 does not fit an allocation of --nodes 4"));
}

TEST_CASE("options: --rdzv-backend etcd goes to the nodes only with its members' list", "[slurm][options][etcd]") {
  JobOptions j;
  j.mtrain = "/usr/bin/mtrain";
  j.nodes = 3;
  j.launch_args = {"--nnodes", "2:3", "--rdzv-backend", "etcd"};
  CHECK_THROWS_WITH(finalize(j, "/w"), Catch::Contains("--rdzv-backend etcd needs --rdzv-endpoint"));
  j.launch_args = {"--nnodes", "2:3", "--rdzv_backend=etcd"};
  CHECK_THROWS_WITH(finalize(j, "/w"), Catch::Contains("--rdzv-backend etcd needs --rdzv-endpoint"));
  j.launch_args = {"--nnodes", "2:3", "--rdzv-backend", "etcd", "--rdzv-endpoint", "e1:2379,e2:2379,e3:2379"};
  CHECK_NOTHROW(finalize(j, "/w"));
  j.launch_args = {"--nnodes", "2:3", "--rdzv-backend", "mtrain"};  // the first node's store by default
  CHECK_NOTHROW(finalize(j, "/w"));
}

TEST_CASE("a 100 MB job name is refused, a 200-byte one accepted", "[slurm][options][limits]") {
  JobOptions j;
  j.mtrain = "/usr/bin/mtrain";
  j.job_name = std::string(100u << 20, 'n');
  try {
    finalize(j, "/work");
    FAIL("accepted a 100 MB job name");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("at most 200"));
    CHECK(e.paragraph().size() < 400);
  }
  j.job_name = std::string(200, 'n');
  CHECK_NOTHROW(finalize(j, "/work"));
}

TEST_CASE("job file: an alias bomb under slurm is refused quickly", "[slurm][options][limits]") {
  std::string bomb = "a0: &a0 [x,x,x,x,x,x,x,x,x]\n";
  for (int i = 1; i < 7; ++i) {
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 9; ++k) bomb += (k ? ",*a" : "*a") + std::to_string(i - 1);
    bomb += "]\n";
  }
  bomb += "slurm:\n  setup: *a6\n";
  auto path = write_yaml("bomb.yaml", bomb);
  try {
    (void)written(path);
    FAIL("accepted the alias bomb");
  } catch (const mtrain::Error& e) {
    CHECK_THAT(e.message(), Catch::Contains("alias"));
  }
  fs::remove(path);
}

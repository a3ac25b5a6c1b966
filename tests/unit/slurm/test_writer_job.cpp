// The job `mtrain slurm script|submit` writes (lib/slurm/writer_job.cpp): --set split between the
// Slurm settings and mtrain launch, the job file's absolute path, the launch words in order, the
// program, this mtrain by default, and the default script path.
#include <catch2/catch.hpp>

#include "mtrain/config/registry.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/slurm/writer_job.hpp"

using namespace mtrain;
using namespace mtrain::slurm;

namespace {
nlohmann::json defaults(std::map<std::string, config::json> values = {}) {
  config::Layer l;
  l.source = config::Source::Cli;
  l.origin = "command line";
  l.values = std::move(values);
  return config::resolve(config::job_registry(), {l}).job;
}
}  // namespace

TEST_CASE("split_sets: slurm.* for the writer, the rest for mtrain launch, in order", "[slurm][writer]") {
  const auto s = split_sets({"slurm.partition=gpu", "train.max_steps=5", " slurm.time=1:00:00", "optim.lr=0.1"});
  CHECK(s.slurm == std::vector<std::string>{"slurm.partition=gpu", " slurm.time=1:00:00"});
  CHECK(s.launch == std::vector<std::string>{"train.max_steps=5", "optim.lr=0.1"});
  CHECK_THROWS_AS(split_sets({"slurm.partition"}), Error);
}

TEST_CASE("writer_job: the words around the settings become the job", "[slurm][writer]") {
  WriterWords w;
  w.config = "jobs/../jobs/a.yaml";
  w.launch_args = {"--nproc-per-node", "4", "--max-restarts", "1"};
  w.launch_sets = {"train.max_steps=5"};
  w.program = {"python3", "train.py"};
  w.self_path = "/opt/mtrain/bin/mtrain";
  w.cwd = "/home/u/proj";
  const JobOptions job = writer_job(defaults(), w);
  CHECK(job.config == "/home/u/proj/jobs/a.yaml");
  CHECK(job.launch_args ==
        std::vector<std::string>{"--nproc-per-node", "4", "--max-restarts", "1", "--set", "train.max_steps=5"});
  CHECK(job.program == w.program);
  CHECK(job.mtrain == "/opt/mtrain/bin/mtrain");
  CHECK(default_script_file(job, w.cwd) == "/home/u/proj/mtrain-slurm/" + job.job_name + ".sbatch");

  // slurm.mtrain and slurm.chdir name where the compute nodes find things; an absolute --config stays.
  w.config = "/etc/job.yaml";
  const JobOptions named = writer_job(defaults({{"slurm.mtrain", "/shared/mtrain"}, {"slurm.chdir", "/scratch/run"}}), w);
  CHECK(named.mtrain == "/shared/mtrain");
  CHECK(named.config == "/etc/job.yaml");
  CHECK(default_script_file(named, w.cwd) == "/scratch/run/mtrain-slurm/" + named.job_name + ".sbatch");

  WriterWords none;
  none.cwd = "/home/u";
  CHECK_THROWS_WITH(writer_job(defaults(), none), Catch::Matchers::Contains("path of mtrain"));  // finalize's check
  none.self_path = "/opt/mtrain/bin/mtrain";
  CHECK(writer_job(defaults(), none).config.empty());
}

// The job `mtrain slurm script|submit` writes (lib/slurm/writer_job.cpp): --set split between the
// Slurm settings and mtrain launch, the job file's absolute path, the launch words in order, the
// program, this mtrain by default, and the default script path.
#include <catch2/catch.hpp>

#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/slurm/script.hpp"
#include "lib/slurm/writer_job.hpp"

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

TEST_CASE("writer_job: an elastic etcd job set in the job file makes the same script as its flags",
          "[slurm][writer][etcd]") {
  // The nodes' `mtrain launch --config` reads launch.nnodes from the file: the script must be the
  // elastic one (token made, --no-kill) though no launch word says so.
  WriterWords w;
  w.config = "job.yaml";
  w.self_path = "/opt/mtrain/bin/mtrain";
  w.cwd = "/home/u";
  auto file = defaults({{"slurm.nodes", 3},
                        {"launch.nnodes", "2:3"},
                        {"launch.rdzv_backend", "etcd"},
                        {"launch.rdzv_endpoint", "e1:2379,e2:2379,e3:2379"}});
  const JobOptions job = writer_job(file, w);
  CHECK(elastic_job(job));
  CHECK(launch_value(job, "launch.rdzv_backend") == std::optional<std::string>("etcd"));
  const std::string text = render_script(job, {"0.0", "mtrain slurm script"});
  CHECK_THAT(text, Catch::Contains("ELASTIC=1"));
  CHECK_THAT(text, Catch::Contains("--no-kill"));
  // A flag overrides the file: --nnodes 3 makes it a fixed job again.
  w.launch_args = {"--nnodes", "3"};
  CHECK_FALSE(elastic_job(writer_job(file, w)));
  // etcd in the file without its members is refused at submit, as with the flags.
  w.launch_args.clear();
  CHECK_THROWS_WITH(
      writer_job(defaults({{"slurm.nodes", 3}, {"launch.nnodes", "2:3"}, {"launch.rdzv_backend", "etcd"}}), w),
      Catch::Matchers::Contains("--rdzv-backend etcd needs --rdzv-endpoint"));
  // A job file that leaves them out stays a plain job.
  CHECK_FALSE(elastic_job(writer_job(defaults({{"slurm.nodes", 3}}), w)));
}

TEST_CASE("writer_job: submit's etcd TLS and auth flags reach every node's mtrain launch in the script",
          "[slurm][writer][etcd]") {
  // Not slurm.* options: they pass through as launch words. A node started without them would
  // speak plain HTTP to https members, or present no client certificate.
  WriterWords w;
  w.self_path = "/opt/mtrain/bin/mtrain";
  w.cwd = "/home/u";
  w.launch_args = {"--nnodes",
                   "2:3",
                   "--rdzv-backend",
                   "etcd",
                   "--rdzv-endpoint",
                   "https://e1:2379,https://e2:2379,https://e3:2379",
                   "--rdzv-etcd-cacert",
                   "/etc/etcd/ca dir/ca.crt",
                   "--rdzv-etcd-cert",
                   "/etc/etcd/node.crt",
                   "--rdzv-etcd-key",
                   "/etc/etcd/node.key",
                   "--rdzv-etcd-user",
                   "trainer",
                   "--rdzv-etcd-password-file",
                   "/home/u/.etcd-password"};
  const JobOptions job = writer_job(defaults({{"slurm.nodes", 3}}), w);
  CHECK(elastic_job(job));
  const std::string text = render_script(job, {"0.0", "mtrain slurm submit"});
  for (const char* words : {"--rdzv-endpoint https://e1:2379,https://e2:2379,https://e3:2379",
                            "--rdzv-etcd-cacert '/etc/etcd/ca dir/ca.crt'", "--rdzv-etcd-cert /etc/etcd/node.crt",
                            "--rdzv-etcd-key /etc/etcd/node.key", "--rdzv-etcd-user trainer",
                            "--rdzv-etcd-password-file /home/u/.etcd-password"})
    CHECK_THAT(text, Catch::Contains(words));
}

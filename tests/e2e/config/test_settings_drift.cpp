// The three ways settings drifted apart while they were defined in three places (issue 18), as
// users met them: launch.* values of a job file that `mtrain launch` ignored, a port rule that
// differed between `config show` and `launch`, and slurm: keys `mtrain launch --config` refused.
#include <catch2/catch.hpp>

#include "run.hpp"

using namespace e2e;

namespace {
// The first line that starts with "error:" (config show prints a slurm.error setting too).
std::string first_error_line(const std::string& out) {
  auto at = out.rfind("error:", 0) == 0 ? 0 : out.find("\nerror:");
  if (at == std::string::npos) return "";
  if (at > 0) ++at;
  return out.substr(at, out.find('\n', at) - at);
}
}  // namespace

TEST_CASE("launch reads launch.launcher and launch.rdzv_port from the job file, --rdzv-port exists",
          "[e2e][config][settings]") {
  TempDir d("drift_a");
  const std::string env = "XDG_CONFIG_HOME=" + d.path + "/none ";
  run("printf \"launch:\\n  launcher: slurm\\n\" > " + d.path + "/slurm.yaml");
  Run slurm = run(env + mtrain() + " launch --config " + d.path + "/slurm.yaml --dry-run -- /bin/true");
  INFO(slurm.out);
  CHECK(slurm.rc == 2);  // outside an srun step, as `--launcher slurm` says
  CHECK_THAT(slurm.out, Catch::Contains("--launcher slurm needs to run inside an srun step"));

  // The ssh launcher's rendezvous store listens on launch.rdzv_port (the plan prints offline).
  run("echo \"worker-9 slots=1\" > " + d.path + "/hosts && printf \"launch:\\n  hostfile: " + d.path +
      "/hosts\\n  rdzv_port: 31234\\n\" > " + d.path + "/ssh.yaml");
  Run file = run(env + mtrain() + " launch --config " + d.path + "/ssh.yaml --dry-run --format json -- /bin/true");
  INFO(file.out);
  CHECK(file.rc == 0);
  CHECK_THAT(file.out, Catch::Contains(":31234\""));
  Run flag = run(env + mtrain() + " launch --config " + d.path + "/ssh.yaml --rdzv-port 31235 --dry-run --format json -- /bin/true");
  INFO(flag.out);
  CHECK(flag.rc == 0);
  CHECK_THAT(flag.out, Catch::Contains(":31235\""));
}

TEST_CASE("master port (--master-port): config show and launch take and refuse the same values with the same words",
          "[e2e][config][settings]") {
  TempDir d("drift_b");
  const std::string env = "XDG_CONFIG_HOME=" + d.path + "/none ";
  for (const std::string v : {"0", "auto", "29501", "65536", "-1", "http"}) {
    INFO("--master-port " << v);
    Run show = run(env + mtrain() + " config show --master-port " + v);
    Run launch = run(env + mtrain() + " launch --master-port " + v + " --dry-run --format json -- /bin/true");
    INFO(show.out << "\n---\n" << launch.out);
    CHECK(show.rc == launch.rc);
    CHECK(first_error_line(show.out) == first_error_line(launch.out));
    if (v == "0" || v == "auto") CHECK(launch.rc == 0);
  }
}

TEST_CASE("every slurm: key `mtrain slurm` takes is one `mtrain launch --config` accepts", "[e2e][config][settings]") {
  TempDir d("drift_c");
  const std::string env = "XDG_CONFIG_HOME=" + d.path + "/none ";
  run("printf \"slurm:\\n  gres: gpu:a100:2\\n  signal: USR2@60\\n  setup:\\n    - module load cuda\\n  pattern: agent\\n"
      "  output: " + d.path + "/out-%%j.txt\\n  requeue: true\\n  export: [ALL]\\n  sbatch: --mail-type=END\\n  chdir: " +
      d.path + "\\n\" > " + d.path + "/job.yaml");
  Run validate = run(env + mtrain() + " config validate " + d.path + "/job.yaml");
  INFO(validate.out);
  CHECK(validate.rc == 0);
  Run launch = run(env + mtrain() + " launch --config " + d.path + "/job.yaml --dry-run -- /bin/true");
  INFO(launch.out);
  CHECK(launch.rc == 0);
  Run script = run("cd " + d.path + " && " + env + mtrain() + " slurm script --config " + d.path + "/job.yaml --mtrain /opt/mtrain");
  INFO(script.out);
  CHECK(script.rc == 0);
  CHECK_THAT(script.out, Catch::Contains("--gres=gpu:a100:2") && Catch::Contains("module load cuda") &&
                             Catch::Contains("--mail-type=END"));
  // The sbatch script's launch line hands the same file to `mtrain launch --config`.
  CHECK_THAT(script.out, Catch::Contains("--config") && Catch::Contains(d.path + "/job.yaml"));
  // The environment and --set reach `mtrain slurm` too.
  Run layered = run("cd " + d.path + " && " + env + "MTRAIN_SLURM_PARTITION=big " + mtrain() + " slurm script --config " +
                    d.path + "/job.yaml --mtrain /opt/mtrain --set slurm.account=acct7");
  INFO(layered.out);
  CHECK_THAT(layered.out, Catch::Contains("--partition=big") && Catch::Contains("--account=acct7"));
}

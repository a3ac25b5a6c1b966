#include "lib/launch/launch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "lib/config/export.hpp"
#include "lib/core/environment.hpp"
#include "lib/launch/fit_check.hpp"
#include "lib/launch/launch_decision.hpp"
#include "lib/launch/launcher_signals.hpp"
#include "lib/launch/launch_probes.hpp"
#include "lib/launch/multinode.hpp"
#include "lib/launch/node_agent.hpp"
#include "lib/launch/run_folder_lock.hpp"
#include "lib/launch/supervisor.hpp"
#include "lib/slurm/task_exec.hpp"
#include "lib/rendezvous/token.hpp"
#include "lib/core/own_executable.hpp"

namespace fs = std::filesystem;

namespace mtrain::launch {

std::string new_job_id() {
  std::random_device rd;
  std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(getpid()));
  return fmt::format("mtrain-{:08x}", static_cast<uint32_t>(gen()));
}

std::string find_worker(const std::string& self_exe) {
  fs::path self = fs::path(self_exe).parent_path();
  for (const auto& cand : {self / "mtrain-worker", self / ".." / "libexec" / "mtrain" / "mtrain-worker"}) {
    std::error_code ec;
    if (fs::exists(cand, ec)) return fs::weakly_canonical(cand, ec).string();
  }
  return "";
}

std::string own_worker() { return find_worker(own_executable()); }

static void print_plan(const plan::LaunchPlan& lp, config::PlanFormat format) {
  const std::string out = plan::render(lp, format);
  std::fwrite(out.data(), 1, out.size(), stdout);
}

// Carries out decide_launch's decision (launch_decision.hpp): every effect of a launch is here.
int run_launch(LaunchOptions options) {
  std::error_code cwd_ec;
  const LaunchEnvironment environment{mtrain::process_environment(), fs::current_path(cwd_ec).string()};
  const EnvMap& env = environment.vars;
  SystemLaunchProbes probes;
  LaunchDecision d = decide_launch(std::move(options), environment, probes);
  if (d.mode == LaunchMode::slurm_task) {
    child_default_signals();  // the program starts with default USR1/USR2/PIPE, unblocked
    slurm::exec_as_rank(d.options.plan.program, d.slurm_task);
  }
  if (d.mode == LaunchMode::ssh_launcher) return run_ssh_launch(d.options, *d.hosts, d.facts, d.rdzv_endpoint, env);
  LaunchOptions& opt = d.options;
  const plan::PlanOptions& p = opt.plan;
  const plan::LaunchPlan& lp = d.plan;
  const bool agent = d.agent.has_value();
  if (opt.dry_run) {
    print_plan(lp, opt.format);
    return 0;
  }
  // Will it fit (fit_check.hpp): before any rank starts; an agent's launcher has checked already.
  const FitRecord fit =
      agent || lp.nodes.empty()
          ? FitRecord{}
          : check_fit(opt, lp.world_size, static_cast<int>(lp.nodes.front().workers.size()),
                      !lp.nodes.front().workers.empty() && lp.nodes.front().workers.front().gpu.has_value());
  if (!fit.job_spec_json.empty()) opt.job_spec_json = fit.job_spec_json;

  const std::string& run_dir = d.run_dir;
  // Explicit modes, whatever the umask: no folder or file of a job is ever world-writable.
  create_folders(run_dir, 0755);
  chmod(run_dir.c_str(), 0750);
  // A --log-dir run folder is named by the user (or Slurm): one live launcher at a time writes
  // there (run_folder_lock.hpp). The temporary one is private by its random name.
  std::optional<RunFolderLock> lock;
  if (!d.temp_run_dir) lock.emplace(run_dir, p.job_id);
  PosixProcessRunner runner;
  // Even after a SIGKILL: the guardian removes it (an agent's whole <job>.<random> folder).
  if (d.temp_run_dir) runner.remove_on_launcher_death(agent ? fs::path(run_dir).parent_path().string() : run_dir);
  // Atomic, never through a planted link; every restart re-reads this launcher's own file.
  if (!opt.job_spec_json.empty()) write_file_atomically(d.job_file, opt.job_spec_json, 0640);
  if (!fit.estimate_json.empty()) write_file_atomically(run_dir + "/estimate.json", fit.estimate_json, 0640);
  if (!p.program.empty() && opt.pass_config == config::PassConfig::Deepspeed && !opt.job.is_null())
    write_file_atomically(d.ds_file, config::export_deepspeed(opt.job, agent ? 0 : lp.world_size).doc.dump(2) + "\n", 0640);

  SuperviseOptions so;
  so.program_path = d.program_path;
  so.grace_period = std::chrono::milliseconds(static_cast<long>(opt.grace_period_s * 1000));
  so.error_file_dir = run_dir;
  so.error_files_removed = d.temp_run_dir;  // the report is read after the launcher removed it
  so.output = opt.output;
  so.base_env = env;
  so.base_env.erase(rendezvous::kTokenEnv);  // ranks never need the job token
  so.base_env.erase("MTRAIN_JOB_SPEC");      // nor the job an ssh agent got on stdin (it is in job.json)
  so.heartbeat_timeout_s = opt.heartbeat_timeout_s;
  if (isatty(STDOUT_FILENO)) so.base_env["MTRAIN_CONSOLE_TTY"] = "1";  // ranks' stdout is a pipe
  std::error_code abs_ec;
  const std::string logs = opt.output.log_dir.empty() ? "" : fs::absolute(opt.output.log_dir, abs_ec).string();
  if (!logs.empty())  // said before and after: the console may show only some ranks, or none
    std::fprintf(stderr, "mtrain: job %s: rank logs go to %s/attempt_<N>/<rank>/{stdout,stderr}.log\n",
                 p.job_id.c_str(), logs.c_str());
  int rc = agent ? run_node_agent(p, d.facts, *d.agent, so, runner) : supervise(lp, runner, so);
  if (!logs.empty()) std::fprintf(stderr, "mtrain: job %s: rank logs are in %s\n", p.job_id.c_str(), logs.c_str());
  if (d.temp_run_dir) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
    if (agent) fs::remove(fs::path(run_dir).parent_path(), ec);  // only when no other node's folder is left
  }
  return rc;
}

}  // namespace mtrain::launch

#include "mtrain/launch/launch.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "mtrain/config/export.hpp"
#include "mtrain/config/launch_checks.hpp"
#include "mtrain/core/environment.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/core/work_dir_lock.hpp"
#include "mtrain/launch/host_probe.hpp"
#include "mtrain/launch/job_id.hpp"
#include "mtrain/launch/launcher_signals.hpp"
#include "mtrain/launch/multinode.hpp"
#include "mtrain/launch/node_agent.hpp"
#include "mtrain/launch/preflight.hpp"
#include "mtrain/launch/run_folder_lock.hpp"
#include "mtrain/launch/supervisor.hpp"
#include "mtrain/slurm/allocation.hpp"
#include "mtrain/slurm/task_exec.hpp"
#include "mtrain/rendezvous/endpoint.hpp"
#include "mtrain/rendezvous/token.hpp"

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

static int resolve_port(const std::string& text, const std::string& addr) {
  if (text == "0" || text == "auto") return pick_free_port(addr);
  auto v = str::parse_uint(text);
  if (!v || *v < 1 || *v > 65535)
    throw Error(fmt::format("--master-port '{}' is not a TCP port", text), "Give 1-65535, or 0/auto for a free port.");
  return static_cast<int>(*v);
}

// One agent per node inside a Slurm step: every node's agent derives the same world from Slurm's
// environment, so no node mistakes itself for the master and the port is the job's own.
static void apply_slurm(LaunchOptions& opt, const EnvMap& env, std::string& job_id_source) {
  if (opt.launcher == "local") return;
  auto a = slurm::allocation_from_env(env);
  bool agent_step = a && a->in_step && a->ntasks_per_node == 1;
  if (opt.launcher == "slurm" && !agent_step)
    throw Error("--launcher slurm needs to run inside an srun step with one task per node",
                "Start it as `srun --ntasks-per-node=1 mtrain launch …` inside an allocation, or use "
                "`mtrain slurm submit`.");
  if (!agent_step) return;
  auto& p = opt.plan;
  p.nnodes = static_cast<int>(a->nodes.size());
  p.node_rank = a->node_id;
  if (p.master_addr.empty()) p.master_addr = a->master_addr;
  if (!opt.master_port_given) opt.master_port = std::to_string(a->master_port);
  if (p.job_id.empty()) {
    // Per step: two steps of one allocation are two jobs (their own run folders, job files).
    // Every node of a step sees the same SLURM_STEP_ID.
    p.job_id = "slurm-" + a->job_id;
    auto step = env.find("SLURM_STEP_ID");
    if (step != env.end() && !step->second.empty()) p.job_id += "." + step->second;
    job_id_source = "the Slurm default slurm-$SLURM_JOB_ID.$SLURM_STEP_ID";
  }
}

// Written once per run, atomically (a temporary name, then rename): a rank that reads the file
// sees all of it or none. 0640: a job may hold paths and names its owner keeps private.
// The interpreter of PROGRAM.py and -m, as an absolute path so that --dry-run shows which one.
static void resolve_python(plan::PlanOptions& p, const EnvMap& env) {
  if (!plan::runs_with_python(p)) return;
  try {
    p.python = resolve_program(p.python, env);
  } catch (const Error& e) {
    throw Error(fmt::format("{} runs with Python, but {}", p.program.front(), e.message()),
                "Give the interpreter with --python PATH (or MTRAIN_PYTHON), or --no-python to execute the "
                "program itself.");
  }
}

int run_launch(LaunchOptions opt) {
  EnvMap env = mtrain::process_environment();
  if (opt.launcher == "slurm-task") {
    slurm::TaskEnvOptions t;
    t.role_name = opt.plan.role;
    t.max_restarts = opt.plan.max_restarts;
    t.omp_threads_already_set = env.count("OMP_NUM_THREADS") > 0;
    if (opt.plan.program.empty())
      throw Error("--launcher slurm-task needs a program after `--`", "e.g. `srun … mtrain launch --launcher slurm-task -- python3 train.py`.");
    child_default_signals();  // the program starts with default USR1/USR2/PIPE, unblocked
    slurm::exec_as_rank(opt.plan.program, t);
  }
  auto& m = opt.multi;
  auto& p = opt.plan;
  if (m.rdzv_backend == "c10d") m.rdzv_backend = "mtrain";
  if (m.rdzv_backend != "static" && m.rdzv_backend != "mtrain")
    throw Error(fmt::format("--rdzv-backend '{}' is not known", m.rdzv_backend), "Use static or mtrain.");
  const bool agent = m.ssh_agent || m.rdzv_backend == "mtrain";
  std::string job_id_source = "--job-id / MTRAIN_JOB_ID";
  if (!agent) {
    apply_slurm(opt, env, job_id_source);
    if (!m.nnodes.empty()) {
      auto n = rendezvous::parse_nnodes(m.nnodes);
      if (n.elastic())
        throw Error(fmt::format("--nnodes {} (MIN:MAX) needs the dynamic rendezvous", m.nnodes),
                    "Add --rdzv-backend mtrain --rdzv-endpoint HOST:PORT, or give a fixed --nnodes N.");
      p.nnodes = n.max;
    }
  }
  plan::HostFacts facts = probe_host(env);
  if (p.job_id.empty() && agent && !p.rdzv_id.empty()) {
    p.job_id = p.rdzv_id;  // the same on every node
    job_id_source = "--rdzv-id";
  }
  if (p.job_id.empty()) p.job_id = new_job_id();
  check_job_id(p.job_id, job_id_source);  // it names folders: a name, never a path

  std::optional<topology::Inventory> hosts;
  if (!m.ssh_agent) hosts = selected_hosts(opt);
  if (hosts && !agent) {
    if (m.node_rank_given) {
      apply_hostfile_node(p, *hosts, p.node_rank);  // static node K of the hostfile's world
    } else if (opt.launcher == "ssh" || !is_this_machine(*hosts)) {
      if (opt.launcher != "auto" && opt.launcher != "ssh")
        throw Error(fmt::format("the hostfile selects {} other than this machine, but --launcher is {}",
                                hosts->size() == 1 ? "a host" : "hosts", opt.launcher),
                    "Use --launcher ssh (the default with a hostfile), or start each node by hand with --node-rank.");
      if (opt.master_port == "0" || opt.master_port == "auto")
        throw Error("--master-port auto picks a free port on this machine only, not on the first host",
                    "Give a port number free on the first host (default 29500).");
      p.master_port = resolve_port(opt.master_port, "127.0.0.1");
      return run_ssh_launch(opt, *hosts, facts, env);
    } else {
      apply_hostfile_node(p, *hosts, 0);  // one host, this machine: its slots, no ssh
      p.master_addr.clear();
      p.node_name.clear();
    }
  }
  if (agent && hosts && !m.node_name.empty()) {
    // A node started by hand with the job's hostfile takes its slots from its line.
    if (const auto* h = topology::find_host(*hosts, m.node_name)) {
      if (p.nproc_per_node.empty()) p.nproc_per_node = std::to_string(h->slots.size());
    } else {
      throw Error(fmt::format("--node-name '{}' is not in the hostfile {}", m.node_name, m.hostfile),
                  "Use one of the hostfile's host names, or leave --hostfile out.");
    }
  }

  std::string master_addr_given = p.master_addr;
  if (p.master_addr.empty()) p.master_addr = "127.0.0.1";
  p.master_port = resolve_port(opt.master_port, p.master_addr);

  // Where per-attempt files live: the log dir if given, else a private temp dir for this job.
  // Nodes of one job may share a file system: each node agent has its own subfolder.
  std::string sub = agent ? "/" + (m.node_name.empty() ? facts.hostname : m.node_name) : "";
  std::string run_dir;
  bool temp_run_dir = false;
  if (!opt.output.log_dir.empty()) {
    run_dir = (fs::path(opt.output.log_dir) / p.job_id).string() + sub;
    opt.output.log_dir = run_dir;
  } else {
    // Private to this launcher: a job id is not unique on a machine (every fresh Slurm cluster
    // numbers its jobs from 1, and --job-id is the user's), and a launcher that ends removes its
    // run folder, which must never be another job's.
    const char* tmp = std::getenv("TMPDIR");
    const std::string unique = p.job_id + "." + rendezvous::generate_token().substr(0, 16);
    run_dir = fs::absolute(fs::path(tmp && *tmp ? tmp : "/tmp") / unique).string() + sub;
    temp_run_dir = true;
  }
  p.error_file_dir = run_dir;
  // Watched with --heartbeat-timeout, else once the rank beats (progress_watch.hpp). A heartbeat
  // file the user exported for a watchdog of their own is left alone unless the flag is given.
  p.heartbeat_file = opt.heartbeat_timeout_s > 0 || !env.count("MTRAIN_HEARTBEAT_FILE");
  resolve_python(p, env);
  const std::string job_file = (fs::path(run_dir) / "job.json").string();
  const std::string ds_file = (fs::path(run_dir) / "ds_config.json").string();
  if (!p.program.empty() && !opt.job_spec_json.empty()) {
    p.extra_env["MTRAIN_JOB_FILE"] = job_file;
    if (opt.pass_config == "deepspeed") p.extra_args = {"--deepspeed_config", ds_file};
    if (opt.pass_config == "accelerate") {
      config::json job = opt.job;
      config::set(job, "launch.device", p.device);  // a flag's value is not in the job
      for (const auto& [k, v] : config::accelerate_env(job)) p.extra_env[k] = v;
    }
  }

  if (p.program.empty()) {
    if (opt.worker_path.empty())
      throw Error("no program after `--` and the bundled trainer (mtrain-worker) is not installed next to mtrain",
                  "Give a program, e.g. `mtrain launch --nproc-per-node 2 -- python3 train.py`, or build "
                  "mtrain with LibTorch.");
    p.worker_argv = {opt.worker_path, "--job", (fs::path(run_dir) / "job.json").string()};
  }

  std::optional<AgentOptions> agent_opt;
  if (agent) {
    agent_opt = agent_options(opt, hosts, env);
    p.master_addr = master_addr_given;  // else node 0's address, from the agreement
    p.rdzv_backend = "mtrain";
    p.rdzv_endpoint = agent_opt->endpoint.str();
  }
  if (hosts && opt.dry_run && !agent) {
    // The hostfile's whole job, as the ssh launcher would start it.
    plan::LaunchPlan lp = plan::build_cluster_plan(p, cluster_nodes(*hosts), facts);
    if (m.node_rank_given) lp = plan::build_plan(p, facts);
    std::string out = opt.format == "json" ? plan::to_json(lp).dump(2) + "\n" : plan::to_text(lp);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  plan::PlanOptions preview = p;
  if (agent) {
    if (preview.master_addr.empty()) preview.master_addr = "127.0.0.1";
    preview.nnodes = 1;
    preview.node_rank = 0;
  }
  plan::LaunchPlan lp = plan::build_plan(preview, facts);

  if (opt.dry_run) {
    std::string out = opt.format == "json" ? plan::to_json(lp).dump(2) + "\n" : plan::to_text(lp);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }

  // Input checks that touch the system, before anything starts.
  if (p.program.empty()) {
    const auto job = nlohmann::json::parse(opt.job_spec_json);
    config::check_before_launch(job, agent ? 0 : lp.world_size);
    // Rank 0 of the bundled trainer runs here: a work dir held by a live job refuses now, before
    // any rank starts (lib/core/work_dir_lock.hpp); rank 0 still takes the lock itself.
    if (!agent && lp.nodes.at(0).node_rank == 0) check_work_dir_free(config::get(job, "train.work_dir").get<std::string>());
  }
  SuperviseOptions so;
  so.program_path = resolve_program(lp.nodes.at(0).workers.at(0).argv.at(0), env);
  if (plan::runs_with_python(p) && !p.module && ::access(p.program.front().c_str(), R_OK) != 0)
    throw Error(fmt::format("program '{}' does not exist or cannot be read", p.program.front()),
                "Check the path; a PROGRAM ending in .py runs with Python, so it need not be executable.");
  if (!agent && lp.nodes.at(0).node_rank == 0) check_port_free(lp.master_addr, lp.master_port);

  // Explicit modes, whatever the umask: no folder or file of a job is ever world-writable.
  create_folders(run_dir, 0755);
  chmod(run_dir.c_str(), 0750);
  // A --log-dir run folder is named by the user (or Slurm): one live launcher at a time writes
  // there (run_folder_lock.hpp). The temporary one is private by its random name.
  std::optional<RunFolderLock> lock;
  if (!temp_run_dir) lock.emplace(run_dir, p.job_id);
  PosixProcessRunner runner;
  // Even after a SIGKILL: the guardian removes it (an agent's whole <job>.<random> folder).
  if (temp_run_dir) runner.remove_on_launcher_death(agent ? fs::path(run_dir).parent_path().string() : run_dir);
  // Atomic, never through a planted link; every restart re-reads this launcher's own file.
  if (!opt.job_spec_json.empty()) write_file_atomically(job_file, opt.job_spec_json, 0640);
  if (!p.program.empty() && opt.pass_config == "deepspeed" && !opt.job.is_null())
    write_file_atomically(ds_file, config::export_deepspeed(opt.job, agent ? 0 : lp.world_size).doc.dump(2) + "\n", 0640);

  so.grace_period = std::chrono::milliseconds(static_cast<long>(opt.grace_period_s * 1000));
  so.error_file_dir = run_dir;
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
  int rc = agent ? run_node_agent(p, facts, *agent_opt, so, runner) : supervise(lp, runner, so);
  if (!logs.empty()) std::fprintf(stderr, "mtrain: job %s: rank logs are in %s\n", p.job_id.c_str(), logs.c_str());
  if (temp_run_dir) {
    std::error_code ec;
    fs::remove_all(run_dir, ec);
    if (agent) fs::remove(fs::path(run_dir).parent_path(), ec);  // only when no other node's folder is left
  }
  return rc;
}

}  // namespace mtrain::launch

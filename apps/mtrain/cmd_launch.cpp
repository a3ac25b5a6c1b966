// `mtrain launch`: flags → LaunchOptions → launch::run_launch.
#include <unistd.h>

#include <filesystem>

#include "commands.hpp"
#include "mtrain/config/compat_flags.hpp"
#include "mtrain/config/data_files.hpp"
#include "mtrain/config/export.hpp"
#include "mtrain/config/registry.hpp"
#include "mtrain/config/resolve_job.hpp"
#include "mtrain/core/environment.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/launch/launch.hpp"
#include "mtrain/topology/gpu_list.hpp"

namespace mtrain::app {

namespace {

struct LaunchFlags {
  launch::LaunchOptions opt;
  std::string ranks_filter;
  bool no_prefix = false;
  bool no_local_rank = false;
  std::map<std::string, std::string> job_flags;  // setting key → text
  std::vector<std::string> sets;
  std::string config_file;
};

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

// The job through every layer (defaults < user file < --config < MTRAIN_* < flags < --set).
config::Resolved resolve(const LaunchFlags& f) {
  config::JobInputs in;
  in.job_file = f.config_file;
  in.flags = f.job_flags;
  in.sets = f.sets;
  in.env = mtrain::process_environment();
  auto r = config::resolve_job(config::job_registry(), in);
  for (const auto& w : r.warnings) std::fprintf(stderr, "mtrain: warning: %s\n", w.c_str());
  return r;
}

std::string text_of(const config::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// launch.* values from a job or user file fill in what neither a flag nor MTRAIN_* gave.
void apply_file_launch_settings(const config::Resolved& r, CLI::App& sub, launch::LaunchOptions& o) {
  auto from_file = [&](const std::string& key, const std::string& flag) {
    auto it = r.provenance.find(key);
    if (it == r.provenance.end()) return false;
    auto src = it->second.first;
    if (src != config::Source::JobFile && src != config::Source::UserFile) return false;
    return sub.get_option(flag)->count() == 0;
  };
  auto str = [&](const char* key, const char* flag, std::string& dst) {
    if (from_file(key, flag)) dst = text_of(config::get(r.job, key));
  };
  str("launch.nproc_per_node", "--nproc-per-node", o.plan.nproc_per_node);
  str("launch.gpus", "--gpus", o.plan.gpus);
  str("launch.device", "--device", o.plan.device);
  str("launch.include", "--include", o.plan.include);
  str("launch.exclude", "--exclude", o.plan.exclude);
  str("launch.master_addr", "--master-addr", o.plan.master_addr);
  str("launch.master_port", "--master-port", o.master_port);
  str("launch.log_dir", "--log-dir", o.output.log_dir);
  str("launch.pass_config", "--pass-config", o.pass_config);
  if (from_file("launch.raw_output", "--raw-output")) o.output.raw_output = config::get(r.job, "launch.raw_output").get<bool>();
  if (from_file("launch.max_restarts", "--max-restarts"))
    o.plan.max_restarts = config::get(r.job, "launch.max_restarts").get<int>();
  if (from_file("launch.nnodes", "--nnodes")) o.multi.nnodes = text_of(config::get(r.job, "launch.nnodes"));
  str("launch.hostfile", "--hostfile", o.multi.hostfile);
  str("launch.rdzv_backend", "--rdzv-backend", o.multi.rdzv_backend);
  str("launch.scale_up", "--scale-up", o.multi.scale_up);
  if (from_file("launch.rdzv_timeout_s", "--rdzv-timeout"))
    o.multi.rdzv_timeout_s = config::get(r.job, "launch.rdzv_timeout_s").get<double>();
}

// launch's own flags as the compatibility rewrite needs them: spelling → takes a value.
config::KnownFlags known_flags(const CLI::App& sub) {
  config::KnownFlags k{{"-h", false}, {"--help", false}};
  for (const CLI::Option* opt : sub.get_options()) {
    const bool value = opt->get_items_expected_max() > 0;  // flags expect 0 items
    for (const auto& n : opt->get_lnames()) k["--" + n] = value;
    for (const auto& n : opt->get_snames()) k["-" + n] = value;
  }
  return k;
}

}  // namespace

void add_launch(CLI::App& root, Exit& exit) {
  auto f = std::make_shared<LaunchFlags>();
  auto& o = f->opt;
  o.plan.nproc_per_node = "";
  auto* sub = root.add_subcommand("launch", "Start one process per rank with the torchrun environment and supervise them");
  sub->allow_extras();
  sub->prefix_command();  // everything from the program name on belongs to the program
  sub->footer("Usage: mtrain launch [OPTIONS] [--] [PROGRAM ARGS...]; without PROGRAM the bundled trainer runs.\n"
              "PROGRAM.py runs with Python (--python, MTRAIN_PYTHON, else python3 on PATH) unless --no-python.\n\n" +
              config::compat_help());
  // torchrun, deepspeed and accelerate spellings become mtrain's before CLI11 parses (compat_flags.hpp).
  exit.rewrite["launch"] = [sub](const std::vector<std::string>& words) {
    auto r = config::rewrite_launch_args(words, known_flags(*sub));
    for (const auto& n : r.notes) std::fprintf(stderr, "mtrain: note: %s\n", n.c_str());
    return r.args;
  };
  auto env = [](CLI::Option* opt, const std::string& flag) {
    opt->envname(config::env_name(flag));
    return opt;
  };
  auto group = [&](CLI::Option* opt, const char* g) { opt->group(g); return opt; };

  const char* kRanks = "Ranks and GPUs";
  group(env(sub->add_option("--nproc-per-node,--nproc", o.plan.nproc_per_node, config::job_registry().find("launch.nproc_per_node")->help),
            "nproc-per-node"), kRanks);
  group(env(sub->add_option("--gpus", o.plan.gpus, "GPU ids to use, e.g. 0,3 (from CUDA_VISIBLE_DEVICES if set)"),
            "gpus"), kRanks);
  group(env(sub->add_option("--device", o.plan.device,
                            "What ranks compute on: auto (GPUs when present), cpu (no GPU is assigned, "
                            "CUDA_VISIBLE_DEVICES is empty) or gpu (fail when this node has none)")
                ->check(CLI::IsMember({"auto", "cpu", "gpu"}))
                ->default_str("auto"),
            "device"), kRanks);
  group(env(sub->add_option("--include", o.plan.include, "DeepSpeed-style selection, e.g. localhost:0,2"), "include"),
        kRanks);
  group(env(sub->add_option("--exclude", o.plan.exclude, "DeepSpeed-style exclusion, e.g. localhost:1"), "exclude"),
        kRanks);

  const char* kRdzv = "Rendezvous";
  group(env(sub->add_option("--master-addr", o.plan.master_addr, "Address of rank 0's store (default 127.0.0.1)"),
            "master-addr"), kRdzv);
  group(env(sub->add_option("--master-port", o.master_port, "Port of rank 0's store; 0 or auto picks a free one")
                ->default_str("29500"),
            "master-port"), kRdzv);
  group(env(sub->add_option("--launcher", o.launcher,
                            "auto (Slurm agent step if detected, ssh when the hostfile names other hosts, else "
                            "local), local, ssh, slurm, or slurm-task (srun started every rank: translate its "
                            "environment and run the program)")
                ->check(CLI::IsMember({"auto", "local", "ssh", "slurm", "slurm-task"}))
                ->default_str("auto"),
            "launcher"), kRdzv);
  group(env(sub->add_option("--nnodes", o.multi.nnodes,
                            "Nodes in the job: N, or MIN:MAX with --rdzv-backend mtrain (static: start mtrain on "
                            "each node with --node-rank)"),
            "nnodes"), kRdzv);
  group(env(sub->add_option("--node-rank", o.plan.node_rank, "This node's rank, 0..nnodes-1 (node 0 hosts rank 0)")
                ->check(CLI::Range(0, 65535)),
            "node-rank"), kRdzv);
  group(env(sub->add_option("--rdzv-id", o.plan.rdzv_id, "Run id (TORCHELASTIC_RUN_ID); default: the job id"),
            "rdzv-id"), kRdzv);
  group(env(sub->add_option("--job-id", o.plan.job_id, "Job id (MTRAIN_JOB_ID); default: generated"), "job-id"),
        kRdzv);
  group(env(sub->add_option("--role", o.plan.role, "Role name (ROLE_NAME)")->default_str("default"), "role"), kRdzv);
  group(env(sub->add_option("--rdzv-backend", o.multi.rdzv_backend,
                            "static (node ranks from --node-rank or the hostfile) or mtrain (nodes join the store "
                            "at --rdzv-endpoint and get node ranks; c10d is taken as mtrain)")
                ->check(CLI::IsMember({"static", "mtrain", "c10d"}))
                ->default_str("static"),
            "rdzv-backend"), kRdzv);
  group(env(sub->add_option("--rdzv-endpoint", o.multi.rdzv_endpoint,
                            "HOST[:PORT] of the node rendezvous store (default port 29400); the node with that "
                            "address holds it, listening only there. Needs MTRAIN_RDZV_TOKEN on every node"),
            "rdzv-endpoint"), kRdzv);
  group(env(sub->add_option("--rdzv-timeout", o.multi.rdzv_timeout_s,
                            "Seconds for every node to join before the job fails, naming the missing ones")
                ->check(CLI::Range(0.1, 86400.0))
                ->default_str("300"),
            "rdzv-timeout"), kRdzv);
  group(env(sub->add_option("--rdzv-last-call", o.multi.rdzv_last_call_s,
                            "With --nnodes MIN:MAX: seconds to wait for more nodes once MIN have joined")
                ->check(CLI::Range(0.0, 86400.0))
                ->default_str("30"),
            "rdzv-last-call"), kRdzv);
  group(env(sub->add_option("--node-timeout", o.multi.node_timeout_s,
                            "Seconds without heartbeats after which a node counts as lost and the job stops")
                ->check(CLI::Range(0.5, 86400.0))
                ->default_str("30"),
            "node-timeout"), kRdzv);
  group(env(sub->add_option("--scale-up", o.multi.scale_up,
                            "With --nnodes MIN:MAX, a node arriving while the job runs: checkpoint (the ranks get "
                            "the preemption notice, save, and the job re-forms with it), now (re-form at once) or off "
                            "(it waits for the next failure)")
                ->check(CLI::IsMember({"checkpoint", "now", "off"}))
                ->default_str("checkpoint"),
            "scale-up"), kRdzv);
  group(env(sub->add_option("--node-name", o.multi.node_name, "This node's name in the job (default: the hostname)"),
            "node-name"), kRdzv);

  const char* kHosts = "Hosts (ssh)";
  group(env(sub->add_option("--hostfile", o.multi.hostfile,
                            "Hosts, one per line: 'worker-0 slots=4', 'alice@worker-1 gpus=0,2' (DeepSpeed format)"),
            "hostfile"), kHosts);
  group(env(sub->add_option("--num-nodes", o.multi.num_nodes, "Use the first N hosts of the hostfile")
                ->check(CLI::Range(0, 1 << 20)),
            "num-nodes"), kHosts);
  group(env(sub->add_option("--num-gpus", o.multi.num_gpus, "Use the first N slots of each host")
                ->check(CLI::Range(0, 1 << 20)),
            "num-gpus"), kHosts);
  group(env(sub->add_option("--remote-mtrain", o.multi.remote_mtrain,
                            "Path of mtrain on the other hosts (default: this binary's path)"),
            "remote-mtrain"), kHosts);
  group(sub->add_option("--ssh-option", o.multi.ssh_options, "Extra ssh -o KEY=VALUE (repeatable)"), kHosts);
  group(env(sub->add_option("--ssh-port", o.multi.ssh_port, "ssh port on every host")->check(CLI::Range(1, 65535)),
            "ssh-port"), kHosts);
  group(env(sub->add_option("--ssh-identity", o.multi.ssh_identity, "ssh private key (-i)"), "ssh-identity"), kHosts);
  group(sub->add_option("--export", o.multi.exports,
                        "Pass VAR (its value here) or VAR=VALUE to every host (repeatable); NCCL_*, GLOO_*, CUDA_*, "
                        "PYTHON*, OMP_* and MTRAIN_* are passed anyway"),
        kHosts);
  group(env(sub->add_option("--export-env-file", o.multi.export_env_file, "File of VAR=VALUE lines to pass to every host"),
            "export-env-file"), kHosts);
  sub->add_flag("--ssh-agent", o.multi.ssh_agent, "(internal) this is a node agent started by an ssh launcher")
      ->group("");

  const char* kSup = "Supervision";
  group(env(sub->add_option("--max-restarts", o.plan.max_restarts, "Restart the whole group up to K times on failure")
                ->check(CLI::Range(0, 1000000)),
            "max-restarts"), kSup);
  group(env(sub->add_option("--heartbeat-timeout", o.heartbeat_timeout_s,
                            "Stop the job (exit 75) when a rank writes no output and does not touch its "
                            "MTRAIN_HEARTBEAT_FILE for this many seconds; 0: a rank that touches the file (mtrain-worker "
                            "does, every step) is watched once it has, with max(20 s, 20 x its longest gap)")
                ->check(CLI::Range(0.0, 864000.0))
                ->default_str("0"),
            "heartbeat-timeout"), kSup);
  group(env(sub->add_option("--grace-period", o.grace_period_s, "Seconds between SIGTERM and SIGKILL at teardown")
                ->check(CLI::Range(0.0, 86400.0))
                ->default_str("5"),
            "grace-period"), kSup);

  const char* kOut = "Output";
  group(env(sub->add_option("--log-dir", o.output.log_dir,
                            "Write each rank's stdout/stderr to <dir>/<job>/attempt_<k>/<rank>/ instead of the console"),
            "log-dir"), kOut);
  group(env(sub->add_flag("--tee", o.output.tee, "With --log-dir, also show rank output on the console"), "tee"), kOut);
  group(env(sub->add_option("--prefix", o.output.prefix_format,
                            "Console line prefix; {host} {rank} {local_rank} {role}")
                ->default_str("[{host}:{rank}] "),
            "prefix"), kOut);
  group(env(sub->add_flag("--no-prefix", f->no_prefix, "No prefix on console lines"), "no-prefix"), kOut);
  group(env(sub->add_option("--ranks-filter", f->ranks_filter, "Only these ranks reach the console, e.g. 0 or 0,3"),
            "ranks-filter"), kOut);
  group(env(sub->add_flag("--raw-output", o.output.raw_output,
                          "Relay rank output to a terminal byte for byte (default: control characters shown as ^[ …)"),
            "raw-output"), kOut);

  const char* kProg = "Program";
  group(env(sub->add_flag("-m,--module", o.plan.module, "Run PROGRAM as a Python module: PYTHON -u -m PROGRAM (PYTHON: see --python)"),
            "module"), kProg);
  group(env(sub->add_flag("--no-python", o.plan.no_python,
                          "Execute PROGRAM itself even when it ends in .py (torchrun --no-python)"),
            "no-python"), kProg);
  group(env(sub->add_option("--python", o.plan.python,
                            "Interpreter for PROGRAM.py and -m (resolved on PATH, shown by --dry-run)")
                ->default_str("python3"),
            "python"), kProg);
  group(env(sub->add_option("--pass-config", o.pass_config,
                            "How the job's trainer settings reach PROGRAM besides MTRAIN_JOB_FILE: none, "
                            "deepspeed (--deepspeed_config FILE per rank) or accelerate (ACCELERATE_* variables)")
                ->check(CLI::IsMember({"none", "deepspeed", "accelerate"}))
                ->default_str("none"),
            "pass-config"), kProg);
  group(env(sub->add_flag("--local-rank-arg", o.plan.local_rank_arg,
                          "Append --local_rank=N to the program's arguments (DeepSpeed launcher style)"),
            "local-rank-arg"), kProg);
  group(env(sub->add_flag("--no-local-rank", f->no_local_rank, "Do not append --local_rank (the default)"),
            "no-local-rank"), kProg);
  group(env(sub->add_flag("--dry-run", o.dry_run, "Print the launch plan; start nothing"), "dry-run"), kProg);
  group(env(sub->add_option("--format", o.format, "Plan format for --dry-run")->check(CLI::IsMember({"text", "json"})),
            "format"), kProg);

  // Settings of the bundled trainer, generated from the registry (each also MTRAIN_<FLAG>).
  const char* kJob = "Bundled trainer (when no PROGRAM is given)";
  for (const auto& s : config::job_registry().all()) {
    if (s.flag.empty() || s.scope != config::Scope::Job) continue;
    std::string help = s.help;
    if (!s.choices.empty()) help += " {" + str::join(s.choices, ",") + "}";
    std::string key = s.key;
    sub->add_option_function<std::string>(
           "--" + s.flag, [f, key](const std::string& v) { f->job_flags[key] = v; }, help)
        ->group(kJob)
        ->default_str(s.default_value.is_string() ? s.default_value.get<std::string>() : s.default_value.dump());
  }
  sub->add_option("--config", f->config_file, "Job file (YAML; `mtrain config init` writes one)")
      ->envname("MTRAIN_CONFIG")
      ->group(kJob);
  sub->add_option("--set", f->sets, "Any trainer setting: --set key=value (repeatable)")->group(kJob);

  sub->callback([f, sub, &exit] {
    auto& o = f->opt;
    o.plan.program = exit.program(sub->remaining());
    if (o.plan.module && o.plan.no_python)
      throw Error("-m/--module and --no-python contradict each other",
                  "Keep -m to run PROGRAM as a Python module, or --no-python to execute it directly.");
    o.master_port_given = sub->get_option("--master-port")->count() > 0;
    o.multi.node_rank_given = sub->get_option("--node-rank")->count() > 0;
    o.multi.self_exe = self_exe();
    if (f->no_local_rank) o.plan.local_rank_arg = false;
    o.output.prefix = !f->no_prefix;
    if (!f->ranks_filter.empty())
      for (int r : topology::parse_gpu_list(f->ranks_filter, "--ranks-filter")) o.output.ranks_filter.insert(r);
    auto shipped = mtrain::process_environment();
    if (o.multi.ssh_agent && shipped.count("MTRAIN_JOB_SPEC")) {
      // An agent of the ssh launcher: the launcher resolved the job and sent it on stdin.
      const auto spec = config::json::parse(shipped.at("MTRAIN_JOB_SPEC"));
      o.job_spec_json = spec.dump(2);
      if (o.plan.program.empty()) o.worker_path = launch::find_worker(self_exe());
      else o.job = config::load_job(config::job_registry(), spec, "MTRAIN_JOB_SPEC");
    } else if (o.plan.program.empty() || !f->config_file.empty() || !f->job_flags.empty() || !f->sets.empty() ||
               o.pass_config != "none") {
      auto r = resolve(*f);
      apply_file_launch_settings(r, *sub, o);
      o.job_spec_json = config::job_spec(config::job_registry(), r.job).dump(2);
      if (o.plan.program.empty()) {
        o.worker_path = launch::find_worker(self_exe());
      } else {
        // The program gets the job in MTRAIN_JOB_FILE, and as DeepSpeed or accelerate hand it
        // over with --pass-config; what nothing carries is named, never dropped silently.
        o.job = r.job;
        auto w = config::unread_warning(config::unread_settings(config::job_registry(), r, o.pass_config), o.pass_config);
        if (!w.empty()) std::fprintf(stderr, "mtrain: warning: %s\n", w.c_str());
      }
    }
    // The bundled trainer's data files, on the host whose ranks read them: not on a launcher
    // that only starts the hostfile's nodes over ssh (each node's agent checks its own).
    if (o.plan.program.empty() && !o.job_spec_json.empty() && !o.dry_run && (o.multi.ssh_agent || o.multi.hostfile.empty()))
      config::check_data_files(config::json::parse(o.job_spec_json));
    exit.code = launch::run_launch(o);
  });
}

}  // namespace mtrain::app

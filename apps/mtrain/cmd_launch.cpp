// `mtrain launch`: flags → LaunchOptions → launch::run_launch.
#include <unistd.h>

#include <filesystem>

#include "commands.hpp"
#include "mtrain/config/cli_flags.hpp"
#include "mtrain/config/compat_flags.hpp"
#include "mtrain/config/data_files.hpp"
#include "mtrain/config/export.hpp"
#include "mtrain/config/registry.hpp"
#include "mtrain/config/resolve_job.hpp"
#include "mtrain/core/environment.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/launch/launch.hpp"
#include "mtrain/launch/launch_settings.hpp"
#include "mtrain/launch/launch_switches.hpp"

namespace mtrain::app {

namespace {

struct LaunchFlags {
  launch::LaunchOptions opt;
  launch::LaunchSwitches switches;  // --no-prefix, --no-local-rank, --ranks-filter
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

// A trainer setting came from a flag or --set (a job file or MTRAIN_* alone does not make a
// program's launch resolve a job for it, as before the launch settings joined the registry).
bool job_flags_given(const config::Resolved& r) {
  for (const auto& [key, src] : r.provenance)
    if (src.first == config::Source::Cli && config::job_registry().require(key).scope == config::Scope::Job) return true;
  return false;
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
  // Every launch.* setting of the registry: --nproc-per-node, --gpus, --device, --include, --exclude,
  // --hostfile, --master-addr, --master-port, --launcher, --nnodes, --rdzv-backend, --rdzv-port,
  // --rdzv-timeout, --remote-mtrain, --ssh-identity, --export-env-file, --tee, --prefix, --python,
  // --local-rank-arg, --rdzv-last-call, --node-timeout, --heartbeat-timeout, --grace-period, --max-restarts, --pass-config, --log-dir, --raw-output (also MTRAIN_<FLAG>,
  // launch.* in a job file and --set launch.*=…), resolved with the job and applied by
  // launch::apply_launch_settings.
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Launch},
                            "Launch settings (launch.* in a job file)");

  const char* kRdzv = "Rendezvous";
  group(env(sub->add_option("--node-rank", o.plan.node_rank, "This node's rank, 0..nnodes-1 (node 0 hosts rank 0)")
                ->check(CLI::Range(0, 65535)),
            "node-rank"), kRdzv);
  group(env(sub->add_option("--rdzv-id", o.plan.rdzv_id, "Run id (TORCHELASTIC_RUN_ID); default: the job id"),
            "rdzv-id"), kRdzv);
  group(env(sub->add_option("--job-id", o.plan.job_id, "Job id (MTRAIN_JOB_ID); default: generated"), "job-id"),
        kRdzv);
  group(env(sub->add_option("--role", o.plan.role, "Role name (ROLE_NAME)")->default_str("default"), "role"), kRdzv);
  group(env(sub->add_option("--rdzv-endpoint", o.multi.rdzv_endpoint,
                            "HOST[:PORT] of the node rendezvous store (default port 29400); the node with that "
                            "address holds it, listening only there. Needs MTRAIN_RDZV_TOKEN on every node"),
            "rdzv-endpoint"), kRdzv);
  group(env(sub->add_option("--node-name", o.multi.node_name, "This node's name in the job (default: the hostname)"),
            "node-name"), kRdzv);

  const char* kHosts = "Hosts (ssh)";
  group(env(sub->add_option("--num-nodes", o.multi.num_nodes, "Use the first N hosts of the hostfile")
                ->check(CLI::Range(0, 1 << 20)),
            "num-nodes"), kHosts);
  group(env(sub->add_option("--num-gpus", o.multi.num_gpus, "Use the first N slots of each host")
                ->check(CLI::Range(0, 1 << 20)),
            "num-gpus"), kHosts);
  group(sub->add_option("--ssh-option", o.multi.ssh_options, "Extra ssh -o KEY=VALUE (repeatable)"), kHosts);
  group(env(sub->add_option("--ssh-port", o.multi.ssh_port, "ssh port on every host")->check(CLI::Range(1, 65535)),
            "ssh-port"), kHosts);
  group(sub->add_option("--export", o.multi.exports,
                        "Pass VAR (its value here) or VAR=VALUE to every host (repeatable); NCCL_*, GLOO_*, CUDA_*, "
                        "PYTHON*, OMP_* and MTRAIN_* are passed anyway"),
        kHosts);
  sub->add_flag("--ssh-agent", o.multi.ssh_agent, "(internal) this is a node agent started by an ssh launcher")
      ->group("");


  const char* kOut = "Output";
  group(env(sub->add_flag("--no-prefix", f->switches.no_prefix, "No prefix on console lines"), "no-prefix"), kOut);
  group(env(sub->add_option("--ranks-filter", f->switches.ranks_filter, "Only these ranks reach the console, e.g. 0 or 0,3"),
            "ranks-filter"), kOut);
  const char* kProg = "Program";
  group(env(sub->add_flag("-m,--module", o.plan.module, "Run PROGRAM as a Python module: PYTHON -u -m PROGRAM (PYTHON: see --python)"),
            "module"), kProg);
  group(env(sub->add_flag("--no-python", o.plan.no_python,
                          "Execute PROGRAM itself even when it ends in .py (torchrun --no-python)"),
            "no-python"), kProg);
  group(env(sub->add_flag("--no-local-rank", f->switches.no_local_rank, "Do not append --local_rank (the default)"),
            "no-local-rank"), kProg);
  group(env(sub->add_flag("--dry-run", o.dry_run, "Print the launch plan; start nothing"), "dry-run"), kProg);
  group(env(sub->add_option("--format", o.format, "Plan format for --dry-run")->check(CLI::IsMember({"text", "json"})),
            "format"), kProg);

  // Settings of the bundled trainer, generated from the registry (each also MTRAIN_<FLAG>).
  const char* kJob = "Bundled trainer (when no PROGRAM is given)";
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Job}, kJob);
  sub->add_option("--config", f->config_file, "Job file (YAML; `mtrain config init` writes one)")
      ->envname("MTRAIN_CONFIG")
      ->group(kJob);
  sub->add_option("--set", f->sets, "Any trainer setting: --set key=value (repeatable)")->group(kJob);

  sub->callback([f, sub, &exit] {
    auto& o = f->opt;
    o.plan.program = exit.program(sub->remaining());
    o.multi.node_rank_given = sub->get_option("--node-rank")->count() > 0;
    o.multi.self_exe = self_exe();
    // Launch settings come through the registry with the job: one parse and one set of checks
    // for flags, job file, MTRAIN_* and --set.
    const config::Resolved r = resolve(*f);
    launch::apply_launch_settings(r, o);
    launch::apply_launch_switches(f->switches, o);  // after the settings: --no-local-rank wins over launch.local_rank_arg
    auto shipped = mtrain::process_environment();
    if (o.multi.ssh_agent && shipped.count("MTRAIN_JOB_SPEC")) {
      // An agent of the ssh launcher: the launcher resolved the job and sent it on stdin.
      const auto spec = config::json::parse(shipped.at("MTRAIN_JOB_SPEC"));
      o.job_spec_json = spec.dump(2);
      if (o.plan.program.empty()) o.worker_path = launch::find_worker(self_exe());
      else o.job = config::load_job(config::job_registry(), spec, "MTRAIN_JOB_SPEC");
    } else if (o.plan.program.empty() || !f->config_file.empty() || job_flags_given(r) || o.pass_config != "none") {
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

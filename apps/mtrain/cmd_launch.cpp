// `mtrain launch`: flags → LaunchOptions → launch::run_launch.
#include <unistd.h>

#include <filesystem>

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/compat_flags.hpp"
#include "lib/config/export.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/environment.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/job_handoff.hpp"
#include "lib/launch/launch.hpp"
#include "lib/launch/model_check.hpp"
#include "lib/launch/launch_settings.hpp"
#include "lib/core/own_executable.hpp"
#include "console.hpp"

namespace mtrain::app {

namespace {

struct LaunchFlags {
  launch::LaunchOptions opt;
  std::map<std::string, std::string> job_flags;  // setting key → text
  std::vector<std::string> sets;
  std::string config_file;
};

// The job through every layer (defaults < user file < --config < MTRAIN_* < flags < --set).
config::Resolved resolve(const LaunchFlags& f) {
  config::JobInputs in;
  in.job_file = f.config_file;
  in.flags = f.job_flags;
  in.sets = f.sets;
  in.env = mtrain::process_environment();
  auto r = config::resolve_job(config::job_registry(), in);
  print_warnings(r.warnings);
  return r;
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

const char* const kMostUsed = "Most used";

// Help layout only: the five flags a first launch needs lead, and the launcher settings that
// matter only across machines (hostfile, ssh, rendezvous) get their own section after the rest.
void group_for_help(CLI::App& sub) {
  for (const char* name : {"--nproc-per-node", "--strategy", "--model", "--config", "--resume"})
    if (CLI::Option* opt = sub.get_option_no_throw(name)) opt->group(kMostUsed);
  const char* multi_node[] = {"--nnodes", "--num-nodes", "--node-rank", "--node-name", "--master-addr", "--master-port",
                              "--hostfile", "--include", "--exclude", "--launcher", "--remote-mtrain", "--scale-up",
                              "--export", "--export-env-file", "--node-timeout-s", "--rdzv-", "--ssh-"};
  for (CLI::Option* opt : sub.get_options()) {
    if (opt->get_group() == kMostUsed || opt->get_group().empty()) continue;
    const std::string n = opt->get_name(false, false);
    for (const std::string m : multi_node)
      if (n == m || (m.back() == '-' && str::starts_with(n, m))) opt->group("Multi-node (hostfile, ssh, rendezvous)");
  }
}

}  // namespace

void build_launch(CLI::App* sub, Exit& exit) {
  auto f = std::make_shared<LaunchFlags>();
  auto& o = f->opt;
  sub->allow_extras();
  sub->prefix_command();  // everything from the program name on belongs to the program
  sub->footer("Without PROGRAM the bundled trainer runs. PROGRAM.py runs with Python (--python, MTRAIN_PYTHON, else "
              "python3 on PATH) unless --no-python.\n\n" +
              config::compat_help() + "\n\n" +
              completion::examples_block({
                  {"mtrain launch --nproc-per-node 2 train.py --lr 3e-4", "two ranks of your script, as torchrun would"},
                  {"mtrain launch --nproc-per-node 2 --strategy fsdp --max-steps 50", "the bundled trainer, sharded"},
                  {"mtrain launch --config job.yaml --resume auto", "a job file, continued after Ctrl-C"},
              }));
  // torchrun, deepspeed and accelerate spellings become mtrain's before CLI11 parses (compat_flags.hpp).
  exit.rewrite["launch"] = [sub](const std::vector<std::string>& words) {
    auto r = config::rewrite_launch_args(words, known_flags(*sub));
    for (const auto& n : r.notes) std::fprintf(stderr, "mtrain: note: %s\n", n.c_str());
    return r.args;
  };
  // Every launch.* setting of the registry (--nproc-per-node, --hostfile, --rdzv-endpoint, -m …),
  // also MTRAIN_<FLAG>, launch.* in a job file and --set launch.*=…, resolved with the job and
  // applied by launch::apply_launch_settings. Those of this node or run only (--node-rank,
  // --node-name, --dry-run, --format) come from the flag or MTRAIN_<FLAG> alone (registry.hpp).
  // --help lists the groups in the order their first option was added (-h comes first): the
  // most used flags, the trainer's, then the launcher's, multi-node last.
  sub->get_help_ptr()->group(kMostUsed);
  // Settings of the bundled trainer, generated from the registry (each also MTRAIN_<FLAG>).
  const char* kJob = "Bundled trainer (when no PROGRAM is given)";
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Job}, kJob);
  sub->add_option("--config", f->config_file, "Job file (YAML; `mtrain config init` writes one)")
      ->envname("MTRAIN_CONFIG")
      ->group(kJob);
  sub->add_option("--set", f->sets, "Any trainer setting: --set key=value (repeatable)")->group(kJob);
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Launch},
                            "Launch settings (launch.* in a job file)");
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Launch},
                            "This node and run (flag or MTRAIN_* only, never a job file)",
                            config::FlagKind::PerInvocation);
  // Not a setting: the ssh launcher marks the agents it starts (multinode.cpp agent_argv).
  sub->add_flag("--ssh-agent", o.multi.ssh_agent, "(internal) this is a node agent started by an ssh launcher")
      ->group("");
  group_for_help(*sub);

  sub->callback([f, sub, &exit] {
    auto& o = f->opt;
    o.plan.program = exit.program(sub->remaining());
    o.multi.self_exe = own_executable();
    // Launch settings come through the registry with the job: one parse and one set of checks
    // for flags, job file, MTRAIN_* and --set.
    const config::Resolved r = resolve(*f);
    launch::apply_launch_settings(r, o);  // o.multi.node_rank_given too: --node-rank from any source
    const auto env = mtrain::process_environment();
    const auto source = launch::job_source(o, env, !f->config_file.empty(), r);
    print_warnings(launch::hand_job_over(o, source, r, env, own_executable()));
    if (launch::checks_trainer_files_here(o)) launch::check_trainer_files(config::json::parse(o.job_spec_json), o.worker_path);
    exit.code = launch::run_launch(o);
  });
}

}  // namespace mtrain::app

// `mtrain config`: init (wizard), validate, show, import, docs. Flags → options → one library call.
#include <filesystem>
#include <iostream>
#include <memory>

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/config_commands.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/environment.hpp"
#include "lib/estimate/estimate.hpp"
#include "lib/estimate/estimate_job.hpp"
#include "lib/launch/estimate_world.hpp"
#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch.hpp"
#include "lib/launch/model_check.hpp"
#include "lib/launch/launch_settings.hpp"

namespace mtrain::app {

void build_config(CLI::App* config, Exit& exit) {
  namespace cfg = mtrain::config;
  const auto& reg = cfg::job_registry();
  config->require_subcommand(1);

  auto* init = config->add_subcommand("init", "Ask a few questions and write a job file for `mtrain launch --config`");
  auto init_opt = std::make_shared<cfg::InitOptions>();
  init->add_option("-o,--output", init_opt->output, "File to write")->capture_default_str();
  init->add_flag("--force", init_opt->force, "Overwrite an existing file");
  init->add_flag("--defaults", init_opt->wizard.use_defaults, "Ask nothing: take every default (for scripts and CI)");
  init->add_option("--set", init_opt->wizard.sets, "key=value answered up front (repeatable)");
  // The strategy question shows what each strategy needs per rank (lib/estimate) and offers the
  // recommended one.
  init_opt->wizard.advise = [](const cfg::Resolved& r) {
    launch::LaunchOptions lo;
    launch::apply_launch_settings(r, lo);
    auto o = launch::estimate_options(lo, launch::probe_host(mtrain::process_environment()));
    o.worker_path = launch::own_worker();
    const auto e = estimate::estimate_job(r.job, o);
    return cfg::WizardOptions::Advice{estimate::render_text(e),
                                      e.recommended ? config::to_string(e.rows[*e.recommended].c.strategy) : ""};
  };
  // The FSDP units question offers the classes of the user's TorchScript model, as the worker
  // that will train it lists them.
  init_opt->wizard.module_classes = [](const std::string& model_path) {
    return launch::torchscript_module_classes(model_path, launch::own_worker());
  };
  // The launch's model check (issue 45): on the wizard's model.path answer and the job it writes,
  // and in validate, before any rank starts.
  const auto model_check = [](const cfg::json& job) { launch::check_trainer_files(job, launch::own_worker()); };
  init_opt->wizard.check_model = model_check;
  init->callback([&exit, init_opt] { exit.code = cfg::config_init(cfg::job_registry(), *init_opt, std::cin, std::cout); });

  auto* validate = config->add_subcommand("validate", "Check a job file: every error with file:line:column (exit 0 valid, 2 invalid)");
  auto val_opt = std::make_shared<cfg::ValidateOptions>();
  validate->add_option("file", val_opt->file, "Job file (YAML)")->required();
  cfg::add_choice_option(*validate, "--format", val_opt->format, "text or json");
  val_opt->check_model = model_check;
  validate->callback([&exit, val_opt] { exit.code = cfg::config_validate(cfg::job_registry(), *val_opt, std::cout, std::cerr); });

  auto* show = config->add_subcommand("show", "Print the effective job (defaults < user file < job file < MTRAIN_* < flags < --set)");
  auto show_opt = std::make_shared<cfg::ShowOptions>();
  show->add_option("--config", show_opt->job_file, "Job file (YAML)");
  show->add_flag("--sources", show_opt->sources, "Say where each value came from");
  cfg::add_choice_option(*show, "--format", show_opt->format, "yaml or json");
  show->add_option("--set", show_opt->sets, "key=value, highest priority (repeatable)");
  // Slurm's before launch's: --export stays slurm.export here, as before launch.export had it
  // too (add_setting_flags adds a spelling once; --set launch.export=… names the other).
  const size_t own = show->get_options().size();
  for (const auto scope : {cfg::Scope::Job, cfg::Scope::Slurm, cfg::Scope::Launch})
    cfg::add_setting_flags(*show, reg, show_opt->flags, {scope});
  // Its --help lists its own flags: the hundred setting flags (launch's, trainer's, Slurm's) are
  // taken but not listed (group ""), and completion still offers them (completion/model.cpp).
  const auto all = show->get_options();
  for (size_t i = own; i < all.size(); ++i) all[i]->group("");
  show->footer("Every setting's flag is taken too, as `mtrain launch` and `mtrain slurm script` take it (--strategy fsdp, "
               "--partition gpu); `mtrain config docs` lists them.\n\n" +
               mtrain::completion::examples_block({{"mtrain config show --config job.yaml --sources", "each value and where it came from"},
                                                   {"mtrain config show --strategy fsdp --format json", "the job a flag makes"}}));
  show->callback([&exit, show_opt] {
    show_opt->env = mtrain::process_environment();
    exit.code = cfg::config_show(cfg::job_registry(), *show_opt, std::cout, std::cerr);
  });

  auto* import = config->add_subcommand("import", "Turn a DeepSpeed ds_config.json or accelerate config.yaml into an mtrain job");
  auto imp_opt = std::make_shared<cfg::ImportOptions>();
  import->add_option("file", imp_opt->file, "ds_config.json or accelerate config.yaml (detected from the content)")->required();
  import->add_option("-o,--output", imp_opt->output, "Job file to write (default: print it)");
  import->add_flag("--force", imp_opt->force, "Overwrite an existing output file");
  import->callback([&exit, imp_opt] { exit.code = cfg::config_import(cfg::job_registry(), *imp_opt, std::cout, std::cerr); });

  auto* exp = config->add_subcommand("export", "Write a job as a DeepSpeed ds_config.json or an accelerate config.yaml");
  auto exp_opt = std::make_shared<cfg::ExportOptions>();
  exp->add_option("file", exp_opt->file, "Job file (or a DeepSpeed/accelerate config)")->required();
  cfg::add_choice_option(*exp, "--to", exp_opt->to, "deepspeed or accelerate")->required();
  exp->add_option("-o,--output", exp_opt->output, "File to write (default: print it)");
  exp->add_flag("--force", exp_opt->force, "Overwrite an existing output file");
  exp->callback([&exit, exp_opt] {
    exp_opt->env = mtrain::process_environment();
    exit.code = cfg::config_export(cfg::job_registry(), *exp_opt, std::cout, std::cerr);
  });

  auto* docs = config->add_subcommand("docs", "Print the settings reference (docs/settings.md) generated from the registry");
  auto docs_opt = std::make_shared<cfg::DocsOptions>();
  docs->add_option("-o,--output", docs_opt->output, "File to write (default: print it)");
  docs->callback([&exit, docs_opt] { exit.code = cfg::config_docs(cfg::job_registry(), *docs_opt, std::cout); });
}

}  // namespace mtrain::app

// `mtrain estimate`: flags → the resolved job → launch::estimate_for_launch → the table.

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/data_checks.hpp"
#include "lib/config/job_choice.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/config/output_format.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/environment.hpp"
#include "lib/core/error.hpp"
#include "lib/estimate/estimate.hpp"
#include "lib/estimate/estimate_job.hpp"
#include "lib/launch/estimate_world.hpp"
#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch.hpp"
#include "lib/launch/model_check.hpp"
#include "console.hpp"
#include "lib/launch/estimate_command.hpp"

namespace mtrain::app {

namespace {

struct EstimateFlags {
  std::map<std::string, std::string> job_flags;
  std::vector<std::string> sets;
  std::string config_file;
  config::OutputFormat format = config::OutputFormat::Text;
  std::string weights;
};

}  // namespace

void build_estimate(CLI::App* sub, Exit& exit) {
  auto f = std::make_shared<EstimateFlags>();
  sub->footer(
      "Takes the flags of `mtrain launch` (model, precision, batch, zero.*/fsdp.*, --nproc-per-node, --nnodes, "
      "--hostfile, --device-memory) and prints, per strategy, the bytes each rank holds and sends, against the "
      "device memory. Activations are measured by one forward/backward on this CPU (mtrain-worker) and scaled.\n\n" +
      completion::examples_block({{"mtrain estimate --model gpt --nproc-per-node 8 --device-memory 80GiB", "which strategy fits"},
                                  {"mtrain estimate --config job.yaml", "the job a launch would run"}}));
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Launch},
                            "Launch settings (launch.* in a job file)");
  config::add_setting_flags(*sub, config::job_registry(), f->job_flags, {config::Scope::Job},
                            "Bundled trainer");
  sub->add_option("--config", f->config_file, "Job file (YAML, or a DeepSpeed/accelerate config)")
      ->envname("MTRAIN_CONFIG");
  sub->add_option("--set", f->sets, "Any trainer setting: --set key=value (repeatable)");
  sub->add_option("--weights", f->weights,
                  "A safetensors file: the parameters' shapes from its header (activations are then not measured)")
      ->check(CLI::ExistingFile);
  config::add_choice_option(*sub, "--format", f->format, "Output format")->default_str("text");
  sub->callback([f, &exit] {
    config::JobInputs in;
    in.job_file = f->config_file;
    in.flags = f->job_flags;
    in.sets = f->sets;
    in.env = mtrain::process_environment();
    const auto r = config::resolve_job(config::job_registry(), in);
    print_warnings(r.warnings);
    const auto e = launch::estimate_for_launch({r, launch::probe_host(in.env), f->weights, launch::own_worker()});
    print_stdout(f->format == config::OutputFormat::Json ? estimate::to_json(e).dump(2) + "\n"
                                                         : estimate::render_text(e));
    exit.code = 0;
  });
}

}  // namespace mtrain::app

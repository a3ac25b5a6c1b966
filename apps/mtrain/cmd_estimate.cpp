// `mtrain estimate`: flags → the resolved job and its world → estimate::estimate_job → the table.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "mtrain/completion/help.hpp"
#include "mtrain/config/cli_flags.hpp"
#include "mtrain/config/data_checks.hpp"
#include "mtrain/config/job_choice.hpp"
#include "mtrain/config/launch_choices.hpp"
#include "mtrain/config/output_format.hpp"
#include "mtrain/config/registry.hpp"
#include "mtrain/config/resolve_job.hpp"
#include "mtrain/core/environment.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/estimate/estimate.hpp"
#include "mtrain/estimate/estimate_job.hpp"
#include "mtrain/launch/estimate_world.hpp"
#include "mtrain/launch/host_probe.hpp"
#include "mtrain/launch/launch.hpp"
#include "mtrain/launch/launch_settings.hpp"
#include "mtrain/launch/model_check.hpp"

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
    for (const auto& w : r.warnings) std::fprintf(stderr, "mtrain: warning: %s\n", w.c_str());
    const auto& job = r.job;
    launch::LaunchOptions lo;
    launch::apply_launch_settings(r, lo);
    estimate::JobEstimateOptions o = launch::estimate_options(lo, launch::probe_host(in.env));
    o.weights = f->weights;
    o.worker_path = launch::own_worker();
    const nlohmann::json spec = config::job_spec(config::job_registry(), job);
    // The model file is checked as `mtrain launch` checks it before any rank starts (the archive's
    // records, the trust check, the worker's LibTorch), so the probe never loads what launch would
    // refuse, and the refusal is the launcher's paragraph with exit 2.
    if (o.weights.empty()) {
      launch::check_trainer_files(spec, o.worker_path);
      // The probe runs one forward/backward on the job's data: data a launch would refuse (none
      // for a TorchScript model, a missing file) is refused here with the launch's words, exit 2,
      // rather than as the probe's failure with its internal command line. The built-in models
      // train on synthetic data or the embedded corpus, so they need no --data.
      auto problems = config::data_model_problems(spec);
      for (auto& p : config::data_file_problems(spec, true)) problems.push_back(std::move(p));
      for (const auto& p : problems)
        if (p.error)
          throw Error("estimate measures the model with one forward/backward on its data, and " + p.message + ".",
                      p.hint);
    }
    const auto e = estimate::estimate_job(spec, o);
    const std::string out =
        f->format == config::OutputFormat::Json ? estimate::to_json(e).dump(2) + "\n" : estimate::render_text(e);
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0)
      throw Error("estimate: cannot write to standard output",
                  "standard output is closed, on a full disk or a pipe whose reader is gone", kExitFailure);
    exit.code = 0;
  });
}

}  // namespace mtrain::app

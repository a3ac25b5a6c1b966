#include "lib/launch/estimate_command.hpp"

#include "lib/config/data_checks.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/estimate/estimate_job.hpp"
#include "lib/launch/estimate_world.hpp"
#include "lib/launch/launch_settings.hpp"
#include "lib/launch/model_check.hpp"

namespace mtrain::launch {

namespace {

// The built-in models train on synthetic data or the embedded corpus, so they need no data.path;
// what is refused is what a launch would refuse (a missing file, no data for a TorchScript model).
void check_probe_data(const nlohmann::json& spec) {
  auto problems = config::data_model_problems(spec);
  for (auto& p : config::data_file_problems(spec, true)) problems.push_back(std::move(p));
  for (const auto& p : problems)
    if (p.error)
      throw UsageError("estimate measures the model with one forward/backward on its data, and " + p.message + ".",
                       p.hint);
}

}  // namespace

estimate::Estimate estimate_for_launch(const EstimateRequest& r) {
  LaunchOptions launch;
  apply_launch_settings(r.resolved, launch);
  estimate::JobEstimateOptions o = estimate_options(launch, r.here);
  o.weights = r.weights;
  o.worker_path = r.worker_path;
  const nlohmann::json spec = config::job_spec(config::job_registry(), r.resolved.job);
  if (o.weights.empty()) {
    check_trainer_files(spec, o.worker_path);
    check_probe_data(spec);
  }
  return estimate::estimate_job(spec, o);
}

}  // namespace mtrain::launch

#include "lib/slurm/writer_job.hpp"

#include <filesystem>

#include "lib/config/registry.hpp"
#include "lib/core/strings.hpp"

namespace fs = std::filesystem;

namespace mtrain::slurm {

SplitSets split_sets(const std::vector<std::string>& sets) {
  SplitSets out;
  for (const auto& a : sets) (str::starts_with(config::split_assignment(a).first, "slurm.") ? out.slurm : out.launch).push_back(a);
  return out;
}

JobOptions writer_job(const nlohmann::json& resolved, const WriterWords& w) {
  JobOptions job = job_options_from(resolved);
  // The job file as the compute nodes' `mtrain launch --config` finds it, from any folder.
  if (!w.config.empty()) job.config = (fs::path(w.cwd) / w.config).lexically_normal().string();
  job.launch_args = w.launch_args;
  for (const char* key : {"launch.nnodes", "launch.rdzv_backend", "launch.rdzv_endpoint"}) {
    const nlohmann::json& v = config::get(resolved, key);
    if (v.is_string()) job.launch_settings[key] = v.get<std::string>();
  }
  if (job.launch_settings["launch.rdzv_backend"] == "static") job.launch_settings.erase("launch.rdzv_backend");
  for (const auto& a : w.launch_sets) job.launch_args.insert(job.launch_args.end(), {"--set", a});
  job.program = w.program;
  if (job.mtrain.empty()) job.mtrain = w.self_path;
  finalize(job, w.cwd);
  return job;
}

std::string default_script_file(const JobOptions& job, const std::string& cwd) {
  return (fs::path(job.chdir.empty() ? cwd : job.chdir) / "mtrain-slurm" / (job.job_name + ".sbatch")).string();
}

}  // namespace mtrain::slurm

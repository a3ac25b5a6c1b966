#include "lib/launch/job_handoff.hpp"

#include "lib/config/export.hpp"

namespace mtrain::launch {

bool job_flags_given(const config::Resolved& r) {
  for (const auto& [key, src] : r.provenance)
    if (src.first == config::Source::Cli && config::job_registry().require(key).scope == config::Scope::Job) return true;
  return false;
}

JobSource job_source(const LaunchOptions& o, const EnvMap& env, bool config_file_given, const config::Resolved& r) {
  if (o.multi.ssh_agent && env.count("MTRAIN_JOB_SPEC")) return JobSource::shipped;
  if (o.plan.program.empty() || config_file_given || job_flags_given(r) || o.pass_config != config::PassConfig::None)
    return JobSource::resolved;
  return JobSource::none;
}

std::vector<std::string> hand_job_over(LaunchOptions& o, JobSource source, const config::Resolved& r, const EnvMap& env,
                                       const std::string& self_exe) {
  const auto& reg = config::job_registry();
  if (source == JobSource::none) return {};
  const bool trainer = o.plan.program.empty();
  if (trainer) o.worker_path = find_worker(self_exe);
  if (source == JobSource::shipped) {
    const auto spec = config::json::parse(env.at("MTRAIN_JOB_SPEC"));
    o.job_spec_json = spec.dump(2);
    if (!trainer) o.job = config::load_job(reg, spec, "MTRAIN_JOB_SPEC");
    return {};
  }
  o.job_spec_json = config::job_spec(reg, r.job).dump(2);
  if (trainer) return {};
  o.job = r.job;
  auto w = config::unread_warning(config::unread_settings(reg, r, o.pass_config), o.pass_config);
  if (w.empty()) return {};
  return {w};
}

bool checks_trainer_files_here(const LaunchOptions& o) {
  return o.plan.program.empty() && !o.job_spec_json.empty() && !o.dry_run && (o.multi.ssh_agent || o.multi.hostfile.empty());
}

}  // namespace mtrain::launch

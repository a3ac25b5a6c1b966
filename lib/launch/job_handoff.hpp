#pragma once
// How the resolved job reaches the ranks of `mtrain launch` (the branching that lived in
// apps/mtrain/cmd_launch.cpp): an agent of the ssh launcher takes the job its launcher resolved
// and shipped (MTRAIN_JOB_SPEC); otherwise the job is written for the ranks when the bundled
// trainer runs, or when the user's program was given a job (--config, a trainer flag or --set,
// --pass-config). The user's program then also gets it as DeepSpeed or accelerate hand it over,
// and what none of those carry is named in a warning, never dropped silently.
#include <string>
#include <vector>

#include "lib/config/registry.hpp"
#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch.hpp"

namespace mtrain::launch {

enum class JobSource {
  none,      // the user's program, given no job: nothing is written
  shipped,   // an ssh agent: the launcher's job, from MTRAIN_JOB_SPEC
  resolved,  // this launcher's own resolution
};

// A trainer setting came from a flag or --set (a job file or MTRAIN_* alone does not make a
// program's launch resolve a job for it).
bool job_flags_given(const config::Resolved& r);

// Which job the ranks get; `config_file_given`: --config.
JobSource job_source(const LaunchOptions& o, const EnvMap& env, bool config_file_given, const config::Resolved& r);

// Fills o.job_spec_json, o.job (the user's program) and o.worker_path (the bundled trainer,
// found beside `self_exe`) from the source; returns the warnings to print.
std::vector<std::string> hand_job_over(LaunchOptions& o, JobSource source, const config::Resolved& r, const EnvMap& env,
                                       const std::string& self_exe);

// The bundled trainer's model file is checked on the host whose ranks read it: not by a
// launcher that only starts the hostfile's nodes over ssh (each node's agent checks its own),
// nor for --dry-run.
bool checks_trainer_files_here(const LaunchOptions& o);

}  // namespace mtrain::launch

#pragma once
// `mtrain slurm script|submit`: the job to write, from the resolved slurm.* settings and the words
// the writer was given (the branching that lived in apps/mtrain/cmd_slurm.cpp). Its options before
// `--` are Slurm settings or launch options, passed to `mtrain launch` in order; `--set slurm.*`
// resolves with the Slurm settings and any other `--set` goes on to `mtrain launch --set`.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/slurm/job_options.hpp"

namespace mtrain::slurm {

// --set values: slurm.* for the writer's own resolution, the rest for mtrain launch (in order).
struct SplitSets {
  std::vector<std::string> slurm, launch;
};
SplitSets split_sets(const std::vector<std::string>& sets);  // throws on a value without '='

struct WriterWords {
  std::string config;                      // --config as given ("" when none)
  std::vector<std::string> launch_args;    // the options the writer does not know, in order
  std::vector<std::string> launch_sets;    // SplitSets::launch
  std::vector<std::string> program;        // after `--`; empty: the bundled trainer
  std::string self_path;                   // this mtrain, when slurm.mtrain does not name one
  std::string cwd;
};

// The finalized JobOptions (slurm::finalize's checks and defaults); throws mtrain::Error.
JobOptions writer_job(const nlohmann::json& resolved, const WriterWords& w);

// `submit` without --script-file: <chdir or cwd>/mtrain-slurm/<job-name>.sbatch.
std::string default_script_file(const JobOptions& job, const std::string& cwd);

}  // namespace mtrain::slurm

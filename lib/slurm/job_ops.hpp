#pragma once
// The `mtrain slurm` operations, one function each, over a SlurmClient: write + submit a script,
// status, follow the output, cancel. The app layer only maps flags onto these.
#include <functional>
#include <string>

#include "lib/slurm/client.hpp"
#include "lib/slurm/job_options.hpp"
#include "lib/slurm/script.hpp"

namespace mtrain::slurm {

struct Submitted {
  std::string job_id, cluster, script_path, output_pattern;
};

// Render and write the script (creating its folder and the output folder when the output path's
// folder has no % pattern), submit it, and remember job id → script/output in `state_dir`
// (for `logs` after the controller has forgotten the job). A finalized job is expected.
Submitted submit_job(const JobOptions& job, const ScriptContext& ctx, const std::string& script_path,
                     SlurmClient& client, const std::string& state_dir);

// Slurm does not create the folders of --output/--error, and a missing one loses the job's
// output silently: create them (relative paths from --chdir, else `cwd`; a folder with a %
// pattern is left alone). `script` and `submit` both call it.
void make_output_folders(const JobOptions& job, const std::string& cwd);

// Where submit keeps its records: $MTRAIN_SLURM_STATE, else $XDG_CACHE_HOME/mtrain/slurm, else
// $HOME/.cache/mtrain/slurm.
std::string default_state_dir();

struct LogOptions {
  bool follow = false;         // keep reading until the job ends
  bool errors = false;         // the job's --error file instead of its output
  int rank = -1;               // only lines of this srun task ("N: " prefix from srun --label)
  double timeout_s = 0;        // follow at most this long (0: until the job ends)
  double poll_s = 0.5;
};

// Print the job's output through `emit` (whole lines). Returns the job's final status when
// following, else its current status. Throws when no output file can be found.
JobStatus show_logs(SlurmClient& client, const std::string& job_id, const LogOptions& opt,
                    const std::string& state_dir, const std::function<void(const std::string&)>& emit);

// Keep a line of a labelled (srun --label) output if it belongs to `rank`.
bool line_is_rank(const std::string& line, int rank);

}  // namespace mtrain::slurm

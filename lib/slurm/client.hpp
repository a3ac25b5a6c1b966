#pragma once
// Talking to Slurm through its client commands: submit a script, ask for a job's status, find its
// output, cancel it. Every command runs under a timeout through a CommandRunner.
#include <functional>
#include <string>
#include <vector>

#include "lib/slurm/command.hpp"
#include "lib/slurm/job_status.hpp"

namespace mtrain::slurm {

struct SubmitResult {
  std::string job_id, cluster;
};

class SlurmClient {
 public:
  explicit SlurmClient(CommandRunner& runner, double timeout_s = 60) : run_(runner), timeout_(timeout_s) {}

  // `sbatch --parsable SCRIPT`. sbatch missing or refusing → mtrain::Error carrying its stderr;
  // an unknown partition also lists the partitions sinfo knows.
  SubmitResult submit(const std::string& script_path);
  // squeue -t all → sacct (or sacct -c when accounting is off) → scontrol show job; throws
  // mtrain::Error when no source knows the job.
  JobStatus status(const std::string& job_id);
  // `scancel [--signal=SIG] ID`; its stderr on refusal.
  void cancel(const std::string& job_id, const std::string& signal = {});
  // Partitions as sinfo lists them (empty when sinfo fails).
  std::vector<std::string> partitions();

 private:
  CommandResult call(const std::vector<std::string>& argv, bool must_start = true);
  CommandRunner& run_;
  double timeout_;
};

// The job id must be digits (optionally "_N" array index or "+N" het part).
void check_job_id(const std::string& job_id);

}  // namespace mtrain::slurm

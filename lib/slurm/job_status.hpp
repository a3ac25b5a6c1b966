#pragma once
// What Slurm says about one job, read from whichever source still knows it: squeue (queued,
// running, recently ended), sacct (accounting), sacct -c (the job-completion file, when
// accounting is off), scontrol show job (the controller's memory). Parsers are pure.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace mtrain::slurm {

struct JobStatus {
  std::string job_id, name, state, reason, nodes, elapsed;
  int exit_code = -1;   // the batch script's exit code; -1: not known (yet)
  int signal = 0;       // the signal that ended it, 0: none
  std::string stdout_path, stderr_path;
  std::string source;   // which command answered

  bool terminal() const;  // COMPLETED, FAILED, CANCELLED, TIMEOUT, …
  std::string readable() const;  // "FAILED, exit code 3", "RUNNING on n1 for 0:05", …
  nlohmann::json to_json() const;
};

// The field separator mtrain asks squeue to print: a byte that job names do not contain.
inline constexpr char kSep = '\x1f';
// `squeue -h -t all -j ID -o %i<kSep>%T<kSep>%r<kSep>%N<kSep>%M<kSep>%j`
std::optional<JobStatus> parse_squeue(const std::string& out, const std::string& job_id);
// `sacct [-c] -n -P [-X] -j ID -o JobID,State,ExitCode,NodeList,Elapsed,JobName`
std::optional<JobStatus> parse_sacct(const std::string& out, const std::string& job_id);
// `scontrol show job -o ID`
std::optional<JobStatus> parse_scontrol(const std::string& out, const std::string& job_id);

// "3:0" → exit 3, signal 0.
void parse_exit_code(const std::string& text, JobStatus& st);

// Expand Slurm's filename pattern (%j %J %A %x %u %%) for one job.
std::string expand_file_pattern(const std::string& pattern, const std::string& job_id,
                                const std::string& job_name, const std::string& user);

}  // namespace mtrain::slurm

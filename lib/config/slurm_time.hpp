#pragma once
// The one grammar of a Slurm time limit (sbatch --time, slurm.time): read by the registry's check
// of slurm.time and by the Slurm job's own checks (the signal must fire before the limit) alike.
//
//   "" (the partition's default) | UNLIMITED | INFINITE (either case)
//   M | M:S | H:M:S | D-H | D-H:M | D-H:M:S      whole numbers, each at most 18 digits
#include <string>

namespace mtrain::config {

// `problem` is empty when `text` is a time limit, else what is wrong; `seconds` is the limit, or
// -1 for none ("", UNLIMITED) and when there is a problem.
struct SlurmTime {
  long long seconds = -1;
  std::string problem;
};
SlurmTime read_slurm_time(const std::string& text);

}  // namespace mtrain::config

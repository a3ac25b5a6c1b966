#pragma once
// `mtrain slurm task PROGRAM ARGS` (and `mtrain launch --launcher slurm-task`): srun started this
// process as one rank; set the torchrun variables from Slurm's environment and become PROGRAM.
#include <string>
#include <vector>

#include "lib/slurm/allocation.hpp"

namespace mtrain::slurm {

// Never returns on success (execvp). Throws mtrain::Error outside an allocation, for an
// inconsistent environment, or when PROGRAM cannot be started.
[[noreturn]] void exec_as_rank(const std::vector<std::string>& program, TaskEnvOptions opt);

}  // namespace mtrain::slurm

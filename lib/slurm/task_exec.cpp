#include "lib/slurm/task_exec.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/environment.hpp"
#include "lib/core/error.hpp"

namespace mtrain::slurm {

void exec_as_rank(const std::vector<std::string>& program, TaskEnvOptions opt) {
  if (program.empty())
    throw Error("no program to run", "Usage: srun … mtrain slurm task python3 train.py …");
  Env env = mtrain::process_environment();
  auto alloc = allocation_from_env(env);
  if (!alloc)
    throw Error("not inside a Slurm job (SLURM_JOB_ID is not set)",
                "Run it as a task of srun, e.g. `srun --ntasks-per-node=2 mtrain slurm task python3 train.py`.");
  opt.omp_threads_already_set = env.count("OMP_NUM_THREADS") > 0;
  if (opt.error_dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    opt.error_dir = tmp && *tmp ? tmp : "/tmp";
  }
  for (const auto& [k, v] : rank_env_from_slurm(*alloc, opt)) ::setenv(k.c_str(), v.c_str(), 1);
  std::vector<char*> argv;
  argv.reserve(program.size() + 1);
  for (const auto& a : program) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  throw Error(fmt::format("cannot run '{}': {}", program[0], std::strerror(errno)),
              "Check the program path (the job runs in its submit directory unless --chdir is given).",
              127);
}

}  // namespace mtrain::slurm

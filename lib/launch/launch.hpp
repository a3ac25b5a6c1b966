#pragma once
// `mtrain launch` as one library call: probe the host, check the input, build the plan, then
// print it (--dry-run) or supervise it.
#include <string>
#include <vector>

#include "mtrain/launch/output.hpp"
#include "mtrain/plan/plan.hpp"

namespace mtrain::launch {

struct LaunchOptions {
  plan::PlanOptions plan;        // program, GPUs, ranks, rendezvous…
  std::string master_port = "29500";  // number, or 0/auto for a free port
  bool dry_run = false;
  std::string format = "text";   // text | json (dry run)
  double grace_period_s = 5;
  OutputOptions output;
  std::string job_spec_json;     // the resolved job for mtrain-worker (when no program is given)
  std::string worker_path;       // mtrain-worker
  // auto: inside an srun step with one task per node (`srun --ntasks-per-node=1 mtrain launch`),
  // take nodes, node rank and rendezvous from Slurm; else local. slurm: require that.
  // slurm-task: srun started every rank; translate Slurm's environment and exec the program.
  std::string launcher = "auto";
  bool master_port_given = false;
};

int run_launch(LaunchOptions opt);

// mtrain-worker next to the running executable, or in ../libexec/mtrain/.
std::string find_worker(const std::string& self_exe);

std::string new_job_id();

}  // namespace mtrain::launch

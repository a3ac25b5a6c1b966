#pragma once
// Inside a Slurm allocation: what this process is (job, node, task) read from Slurm's environment,
// and the torchrun-compatible rank environment derived from it (docs/architecture.md §3).
//
// Pure functions over an environment map, so every node/task layout is testable without Slurm.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/slurm/hostlist.hpp"

namespace mtrain::slurm {

using Env = std::map<std::string, std::string>;

struct Allocation {
  std::string job_id;              // SLURM_JOB_ID
  std::vector<std::string> nodes;  // the step's nodes if inside a step, else the job's
  int node_id = 0;                 // SLURM_NODEID: index of this node in `nodes`
  int procid = 0;                  // SLURM_PROCID: Slurm's global task id
  int localid = 0;                 // SLURM_LOCALID: task index on this node
  int ntasks = 0;                  // SLURM_NTASKS (step) — 1 per node for agents, 1 per GPU for tasks
  int ntasks_per_node = 0;         // tasks on this node (from SLURM_[STEP_]TASKS_PER_NODE)
  std::vector<int> tasks_per_node; // per node in `nodes` order (uneven layouts: "2(x3),1")
  std::vector<int> gpus_on_node;   // GPU ids this process may name in CUDA_VISIBLE_DEVICES
  int master_port = 0;             // MASTER_PORT if set, else derived from the job id
  std::string master_addr;         // always the first node: rank 0 lives there
  int restart_count = 0;           // SLURM_RESTART_COUNT: > 0 after a requeue
  int cpus_on_node = 0;            // SLURM_CPUS_ON_NODE (0: unknown)
  bool in_step = false;            // inside an srun step (SLURM_STEP_ID set), not the batch shell
};

// nullopt outside Slurm (no SLURM_JOB_ID). Throws mtrain::Error for an inconsistent or malformed
// environment (bad nodelist with its column, a node id or task id outside the allocation).
std::optional<Allocation> allocation_from_env(const Env& env);

// The rendezvous port of a job: 29500 + job_id mod 2500 (29500..31999, below Linux's ephemeral
// range), so every job has its own stable port and concurrent jobs on one node do not collide.
int master_port_for_job(const std::string& job_id);

struct TaskEnvOptions {
  std::string role_name = "default";
  int max_restarts = 0;
  std::string error_dir;           // TORCHELASTIC_ERROR_FILE = <error_dir>/mtrain-<job>-error-<rank>.json; empty: $TMPDIR
  int cpus_on_node = 0;            // for OMP_NUM_THREADS; 0: take the allocation's, else 1
  bool omp_threads_already_set = false;  // the user's OMP_NUM_THREADS wins
};

// `--launcher slurm-task`: srun started every rank; this maps Slurm's view of one task onto the
// torchrun variables. Global ranks are made contiguous per node in node order (rank 0 on the first
// node) whatever distribution srun used. Throws mtrain::Error when the node has more tasks than
// GPUs or the task ids do not fit the allocation.
Env rank_env_from_slurm(const Allocation& a, const TaskEnvOptions& opt = {});

// The global rank of task `localid` on node `node_id` (contiguous per node, node order).
int contiguous_rank(const Allocation& a);

// The port of an elastic job's node rendezvous store: 27000 + job_id mod 2500 (27000..29499),
// beside the job's MASTER_PORT range, so the two never collide and concurrent jobs do not either.
int rendezvous_port_for_job(const std::string& job_id);

// An elastic job inside a Slurm step (`--nnodes MIN:MAX`, one agent task per node): what every
// node's agent derives alike from the allocation, so no one has to pass an endpoint. The store
// lives on the first node (where the batch script runs), on the job's rendezvous port; only that
// node's agent holds it (on a real cluster only it has that address; where several slurmd share
// one machine every agent would otherwise think the endpoint is its own). Nodes join under their
// Slurm node names (the allocation's, as SLURMD_NODENAME), which need not be the hostname.
struct StepRendezvous {
  std::string endpoint;   // "<first node>:<rendezvous port>"
  std::string node_name;  // this node's name in the allocation
  std::string run_id;     // slurm-<job id>[.<step id>]: the same on every node of the step
  bool holds_store = false;
};
StepRendezvous step_rendezvous(const Allocation& a, const Env& env);


}  // namespace mtrain::slurm

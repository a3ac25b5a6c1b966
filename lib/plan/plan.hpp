#pragma once
// The launch plan: who runs where, with which argv and environment (docs/architecture.md §3–4).
// build_plan is a pure function of the options and the facts about the host, so every rank and
// environment assignment is unit-tested without starting anything.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/config/launch_choices.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/topology/inventory.hpp"

namespace mtrain::plan {

using Env = std::map<std::string, std::string>;

struct PlanOptions {
  std::optional<config::RankCount> nproc_per_node;  // absent: as auto (a hostfile's slots where the caller has them)
  std::string gpus;               // --gpus 0,3
  config::DeviceKind device = config::DeviceKind::Auto;  // auto: GPUs when present; cpu: none assigned; gpu: required
  std::string include, exclude;   // DeepSpeed grammar over the inventory
  std::string master_addr;        // default 127.0.0.1 on a single node; required with nnodes > 1
  int nnodes = 1;                 // static multi-node: every node runs its own launcher with
  int node_rank = 0;              // the same nnodes/master and its own node_rank
  int master_port = 29500;        // already resolved (auto → a free port) by the caller
  std::string job_id;
  std::string rdzv_id;            // TORCHELASTIC_RUN_ID; default job_id
  std::string role = "default";
  int max_restarts = 0;
  std::vector<std::string> program;  // argv; empty → the bundled trainer (worker_argv)
  bool module = false;               // -m: <python> -u -m program[0] program[1:]
  // torchrun's rule: a program ending in .py runs as `<python> -u program…` unless no_python.
  std::string python = "python3";    // --python / MTRAIN_PYTHON (the launcher resolves it on PATH)
  bool no_python = false;            // --no-python: exec program[0] itself
  std::vector<std::string> extra_args;  // appended to a program's arguments (--deepspeed_config F)
  Env extra_env;                     // added to every rank's environment (MTRAIN_JOB_FILE, ACCELERATE_*)
  bool local_rank_arg = false;       // append --local_rank=N (DeepSpeed launcher style)
  std::vector<std::string> worker_argv;  // mtrain-worker --job FILE, when program is empty
  std::string error_file_dir;        // TORCHELASTIC_ERROR_FILE = <dir>/attempt_<k>/<rank>/error.json
  // Where this node sits in a world laid out elsewhere (topology::place_ranks over a hostfile,
  // or the rendezvous agreement): its first global rank and the world size. -1/0: equal nodes,
  // first_rank = node_rank * nproc, world = nproc * nnodes.
  int first_rank = -1;
  int world_size = 0;
  std::string node_name;             // MTRAIN_HOST and the plan's host; empty: the hostname
  config::RdzvBackend rdzv_backend = config::RdzvBackend::Static;
  std::string rdzv_endpoint;         // empty: MASTER_ADDR:MASTER_PORT
  bool heartbeat_file = false;       // MTRAIN_HEARTBEAT_FILE per rank (--heartbeat-timeout)
};

// What the launcher found out about this host (impure probing happens in lib/launch).
struct HostFacts {
  std::string hostname = "localhost";
  int cpu_count = 1;
  std::vector<int> gpu_pool;           // selectable GPU ids (CUDA_VISIBLE_DEVICES or detected)
  std::string gpu_pool_source;         // "CUDA_VISIBLE_DEVICES" or "detected" — for messages
  bool omp_num_threads_set = false;    // OMP_NUM_THREADS already in the environment
  bool nccl_async_error_handling_set = false;  // TORCH_NCCL_ASYNC_ERROR_HANDLING already set
};

struct Worker {
  int rank = 0;
  int local_rank = 0;
  std::optional<int> gpu;
  std::vector<std::string> argv;
  Env env;
};

struct Node {
  std::string host;
  int node_rank = 0;
  std::vector<int> gpus;
  std::vector<Worker> workers;
};

struct LaunchPlan {
  int version = 1;
  std::string job_id;
  int world_size = 0;
  int nnodes = 1;
  std::string master_addr;
  int master_port = 0;
  config::RdzvBackend rdzv_backend = config::RdzvBackend::Static;
  std::string rdzv_endpoint;
  int max_restarts = 0;
  std::vector<Node> nodes;
};

LaunchPlan build_plan(const PlanOptions& opt, const HostFacts& facts);

// The GPUs of facts.gpu_pool this node's ranks use: --gpus / --include / --exclude applied,
// none with --device cpu or --nproc-per-node cpu. Throws mtrain::Error for a selection the plan
// refuses. `mtrain estimate` counts its GPUs with it.
std::vector<int> selected_gpus(const PlanOptions& opt, const HostFacts& facts);

// Whether the program runs through the Python interpreter (-m, or a .py file without --no-python).
bool runs_with_python(const PlanOptions& opt);

// A node of a multi-node job as the launcher sees it: a host and its selected slots (hostfile
// slots=N are slots 0..N-1; gpus=LIST names them).
struct ClusterNode {
  std::string host;
  std::vector<int> slots;
};

// The whole job over several hosts (the ssh launcher, and --dry-run with --hostfile): one rank
// per selected slot, ranks contiguous per node in node order, MASTER_ADDR the first host unless
// given. Printing it contacts no host: facts are the launcher's own (core count, OMP threads).
LaunchPlan build_cluster_plan(const PlanOptions& opt, const std::vector<ClusterNode>& nodes, const HostFacts& facts);

// The environment of one worker for restart attempt `attempt` (the plan holds attempt 0).
Env attempt_env(const Worker& w, int attempt, const std::string& error_file_dir);

// MTRAIN_HEARTBEAT_FILE of a rank in attempt `attempt`: <dir>/attempt_<k>/<rank>/heartbeat.
std::string heartbeat_file(const std::string& run_dir, int attempt, int rank);

nlohmann::json to_json(const LaunchPlan& plan);
std::string to_text(const LaunchPlan& plan);
// What --dry-run prints in launch.format: to_text, or to_json indented with a final newline.
std::string render(const LaunchPlan& plan, config::PlanFormat format);

}  // namespace mtrain::plan

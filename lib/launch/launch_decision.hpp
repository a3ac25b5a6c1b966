#pragma once
// What `mtrain launch` will do, decided before anything happens: the mode (this machine, node K
// of a static job, a node of a Slurm step, a node agent of the dynamic rendezvous, the ssh
// launcher…), the nodes, the job id, the rendezvous endpoint, the ports, the run folder and the
// plan. decide_launch is a function of its inputs: the options, the environment (plain values)
// and LaunchProbes, the few questions it asks the system (host facts, files, free ports…), which
// run_launch answers with the real system and the tests with in-memory fakes. run_launch then
// only carries the decision out (folders, job files, the supervisor, the agent, ssh).
#include <optional>
#include <string>
#include <vector>

#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch.hpp"
#include "lib/launch/launch_mode.hpp"
#include "lib/launch/node_agent.hpp"
#include "lib/plan/plan.hpp"
#include "lib/rendezvous/endpoint.hpp"
#include "lib/slurm/task_exec.hpp"
#include "lib/topology/inventory.hpp"

namespace mtrain::launch {

// What the launch reads from outside its options besides the environment variables.
struct LaunchEnvironment {
  EnvMap vars;      // the launcher's environment
  std::string cwd;  // relative TMPDIR is taken from here
};

// The questions decide_launch asks the system. Each answers one thing; none starts anything.
class LaunchProbes {
 public:
  virtual ~LaunchProbes() = default;
  virtual plan::HostFacts host(const EnvMap& env) = 0;             // name, usable cores, GPU pool
  virtual int stat_error(const std::string& path) = 0;             // 0 if the file exists, else errno
  virtual topology::Inventory load_hostfile(const std::string& path) = 0;  // throws Error
  virtual bool names_this_machine(const std::string& host) = 0;
  // This machine's address on the way to `host` ("" if it does not resolve or route).
  virtual std::string route_source_address(const std::string& host, int port) = 0;
  virtual int free_port(const std::string& addr) = 0;              // --master-port 0/auto
  virtual std::string resolve_program(const std::string& program, const EnvMap& env) = 0;  // throws Error
  virtual bool readable(const std::string& path) = 0;
  virtual void check_port_free(const std::string& addr, int port) = 0;  // throws Error
  // The bundled trainer's checks that touch the system (data files…), for a world of `world` ranks.
  virtual void check_job(const std::string& job_spec_json, long long world) = 0;  // throws Error
  // The bundled trainer's work dir is not held by a live job (lib/core/work_dir_lock.hpp).
  virtual void check_work_dir_free(const std::string& work_dir) = 0;  // throws Error
  virtual std::string new_job_id() = 0;
  virtual std::string random_token() = 0;  // names a private run folder
  // A line for stderr that must come out when it is found (before a later refusal).
  virtual void note(const std::string& line) = 0;
};

struct LaunchDecision {
  LaunchMode mode = LaunchMode::local;
  // The options as decided: plan.nnodes/node_rank/job_id/master_addr/master_port, the run
  // folder's paths (error files, MTRAIN_JOB_FILE, worker argv), output.log_dir = the run folder.
  LaunchOptions options;
  plan::HostFacts facts;
  std::string job_id_source;                 // where the job id came from, for its refusal
  std::optional<topology::Inventory> hosts;  // --hostfile and its filters
  slurm::TaskEnvOptions slurm_task;          // slurm_task
  rendezvous::Endpoint rdzv_endpoint;        // ssh_launcher: the store's (port 0: any free one)
  std::optional<AgentOptions> agent;         // dynamic_node, ssh_agent
  // The run folder: <log-dir>/<job>[/<node>] or the private <TMPDIR>/<job>.<random>[/<node>].
  std::string run_dir;
  bool temp_run_dir = false;
  std::string job_file, ds_file;  // job.json and ds_config.json in the run folder
  // What runs on this node (an agent: its ranks as a one-node preview), or what --dry-run
  // prints (with a hostfile: the hostfile's whole job).
  plan::LaunchPlan plan;
  std::string program_path;  // the resolved argv[0] of every rank (not for --dry-run)
};

// Throws mtrain::Error for a refusal (bad or contradictory input, a missing program, a taken
// port…), before anything starts. A slurm_task or ssh_launcher decision carries no plan.
LaunchDecision decide_launch(LaunchOptions opt, const LaunchEnvironment& env, LaunchProbes& probes);

}  // namespace mtrain::launch

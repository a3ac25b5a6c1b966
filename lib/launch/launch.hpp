#pragma once
// `mtrain launch` as one library call: probe the host, check the input, build the plan, then
// print it (--dry-run) or supervise it.
#include <string>
#include <vector>

#include "lib/config/master_port.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/launch/output.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::launch {

// Several nodes: a hostfile (ssh launcher, or the node list of a static/dynamic job started by
// hand) and the node rendezvous.
struct MultiNodeOptions {
  std::string hostfile;             // DeepSpeed format; missing with no other hosts → this machine
  int num_nodes = -1, num_gpus = -1;  // DeepSpeed's --num_nodes/--num_gpus over the hostfile
  std::string nnodes;               // N or MIN:MAX; empty: 1 (or the hostfile's node count)
  bool node_rank_given = false;
  config::RdzvBackend rdzv_backend = config::RdzvBackend::Static;  // c10d is taken as mtrain
  std::string rdzv_endpoint;        // HOST[:PORT] of the node-level store
  config::EtcdApi rdzv_etcd_api = config::EtcdApi::Grpc;  // how the etcd backend speaks (etcd_client.hpp)
  std::string rdzv_etcd_cacert, rdzv_etcd_cert, rdzv_etcd_key;  // TLS to etcd (etcd_client.hpp)
  std::string rdzv_etcd_user, rdzv_etcd_password_file;  // etcd auth; the password never a flag
  int rdzv_port = 29400;            // its port when rdzv_endpoint has none / the ssh launcher's store
  double rdzv_timeout_s = 300;      // every node must have joined by then
  double rdzv_last_call_s = 30;     // with MIN:MAX: wait this long for more once MIN joined
  double node_timeout_s = 30;       // a node silent (no heartbeat) this long is declared lost
  std::string node_name;            // this node's name in the job; empty: the hostname
  config::ScaleUp scale_up = config::ScaleUp::checkpoint;  // a node arriving while running (scale_up.hpp)
  bool ssh_agent = false;           // started by an ssh launcher (internal)
  std::string remote_mtrain;        // mtrain's path on the other hosts; default: this binary's
  std::vector<std::string> ssh_options;  // extra ssh -o KEY=VALUE
  int ssh_port = 0;
  std::string ssh_identity;
  std::vector<std::string> exports;      // VAR or VAR=VALUE for every agent
  std::string export_env_file;           // lines VAR=VALUE
  std::string self_exe;
};

struct LaunchOptions {
  plan::PlanOptions plan;        // program, GPUs, ranks, rendezvous…
  config::MasterPort master_port = config::MasterPort::port(29500);
  bool dry_run = false;
  config::PlanFormat format = config::PlanFormat::Text;  // of the dry run
  std::string device_memory;     // launch.device_memory: per rank, for the fit check ("" = detect)
  bool force = false;            // start even when the estimate says it does not fit (fit_check.hpp)
  double grace_period_s = 5;
  OutputOptions output;
  std::string job_spec_json;     // the resolved job for mtrain-worker (when no program is given)
  std::string worker_path;       // mtrain-worker
  // auto: inside an srun step with one task per node (`srun --ntasks-per-node=1 mtrain launch`),
  // take nodes, node rank and rendezvous from Slurm; else local. slurm: require that.
  // slurm-task: srun started every rank; translate Slurm's environment and exec the program.
  config::LauncherKind launcher = config::LauncherKind::Auto;
  bool master_port_given = false;
  double heartbeat_timeout_s = 0;  // per rank; 0 = off (progress_watch.hpp)
  MultiNodeOptions multi;
  // A program's view of the job (empty `job`: none was resolved): the job spec goes to
  // <run dir>/job.json (MTRAIN_JOB_FILE); pass_config deepspeed adds --deepspeed_config
  // <run dir>/ds_config.json to every rank, accelerate the ACCELERATE_* variables.
  config::PassConfig pass_config = config::PassConfig::None;
  nlohmann::json job;
};

int run_launch(LaunchOptions opt);

// mtrain-worker next to the running executable, or in ../libexec/mtrain/.
std::string find_worker(const std::string& self_exe);
// find_worker(own_executable()): the worker of this mtrain ("" when there is none).
std::string own_worker();

std::string new_job_id();

}  // namespace mtrain::launch

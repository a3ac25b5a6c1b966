#pragma once
// Which of its modes `mtrain launch` takes, settled in one place from a few facts that
// decide_launch gathers first (the options, the Slurm step, the hostfile's hosts). Pure: each
// mode then has its own decider in launch_decision.cpp.
namespace mtrain::launch {

enum class LaunchMode {
  slurm_task,    // --launcher slurm-task: srun started every rank; this one execs the program
  ssh_launcher,  // a hostfile naming other hosts: hold the store, one agent per host over ssh
  local,         // every rank on this machine (also a hostfile of one host that is this machine)
  static_node,   // node K of a static job: --node-rank with a hostfile, or --nnodes N --node-rank K
  slurm_node,    // one node of an srun step with one task per node: its world from Slurm
  dynamic_node,  // --rdzv-backend mtrain: joins the node rendezvous, node rank from the agreement
  ssh_agent,     // a node agent started by the ssh launcher (--ssh-agent)
};

const char* mode_name(LaunchMode mode);

// Where a --hostfile puts this launcher (none without one, or for a node agent, which takes its
// place from the rendezvous).
enum class HostfilePlace {
  none,
  node_k,        // --node-rank K: node K of the hostfile's static world
  this_machine,  // its one selected host is this machine: run the slots here, no ssh
  other_hosts,   // it selects other hosts (or --launcher ssh): start them over ssh
};

struct ModeFacts {
  bool slurm_task = false;     // --launcher slurm-task
  bool ssh_agent = false;      // --ssh-agent
  bool node_rendezvous = false;  // --rdzv-backend mtrain (c10d, or an elastic Slurm step)
  bool slurm_step = false;     // inside an srun step with one task per node
  HostfilePlace hostfile = HostfilePlace::none;
  int nnodes = 1;              // fixed --nnodes (after the hostfile's)
  bool node_rank_given = false;
};

LaunchMode classify_launch(const ModeFacts& f);

}  // namespace mtrain::launch

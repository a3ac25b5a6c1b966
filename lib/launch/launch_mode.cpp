#include "lib/launch/launch_mode.hpp"

namespace mtrain::launch {

const char* mode_name(LaunchMode mode) {
  switch (mode) {
    case LaunchMode::slurm_task: return "slurm task";
    case LaunchMode::ssh_launcher: return "ssh launcher";
    case LaunchMode::local: return "local";
    case LaunchMode::static_node: return "static node";
    case LaunchMode::slurm_node: return "slurm node";
    case LaunchMode::dynamic_node: return "dynamic node";
    case LaunchMode::ssh_agent: return "ssh agent";
  }
  return "?";
}

// The order is the precedence: a rank srun started, an agent of a rendezvous, the launcher of a
// hostfile's other hosts; then a node whose place Slurm gives before one placed by hand.
LaunchMode classify_launch(const ModeFacts& f) {
  if (f.slurm_task) return LaunchMode::slurm_task;
  if (f.ssh_agent) return LaunchMode::ssh_agent;
  if (f.node_rendezvous) return LaunchMode::dynamic_node;
  if (f.hostfile == HostfilePlace::other_hosts) return LaunchMode::ssh_launcher;
  if (f.slurm_step) return LaunchMode::slurm_node;
  if (f.nnodes > 1 || f.node_rank_given) return LaunchMode::static_node;
  return LaunchMode::local;
}

}  // namespace mtrain::launch

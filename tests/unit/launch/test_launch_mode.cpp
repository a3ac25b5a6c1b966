// The launch mode from the facts decide_launch gathers (lib/launch/launch_mode.cpp): each mode,
// and which fact wins when several hold.
#include <catch2/catch.hpp>

#include <string>

#include "lib/launch/launch_mode.hpp"

using namespace mtrain::launch;

TEST_CASE("classify_launch: one mode per situation", "[launch][mode]") {
  ModeFacts f;
  CHECK(classify_launch(f) == LaunchMode::local);
  CHECK(std::string(mode_name(classify_launch(f))) == "local");

  ModeFacts task = f;
  task.slurm_task = true;
  CHECK(classify_launch(task) == LaunchMode::slurm_task);

  ModeFacts agent = f;
  agent.ssh_agent = true;
  CHECK(classify_launch(agent) == LaunchMode::ssh_agent);

  ModeFacts dynamic = f;
  dynamic.node_rendezvous = true;
  CHECK(classify_launch(dynamic) == LaunchMode::dynamic_node);

  ModeFacts ssh = f;
  ssh.hostfile = HostfilePlace::other_hosts;
  CHECK(classify_launch(ssh) == LaunchMode::ssh_launcher);
  CHECK(std::string(mode_name(LaunchMode::ssh_launcher)) == "ssh launcher");

  ModeFacts step = f;
  step.slurm_step = true;
  step.nnodes = 4;
  CHECK(classify_launch(step) == LaunchMode::slurm_node);

  ModeFacts by_hand = f;
  by_hand.nnodes = 2;
  CHECK(classify_launch(by_hand) == LaunchMode::static_node);
  ModeFacts node_k = f;
  node_k.hostfile = HostfilePlace::node_k;
  node_k.node_rank_given = true;
  CHECK(classify_launch(node_k) == LaunchMode::static_node);

  // A hostfile whose one host is this machine, placed as one node: local.
  ModeFacts here = f;
  here.hostfile = HostfilePlace::this_machine;
  CHECK(classify_launch(here) == LaunchMode::local);
}

TEST_CASE("classify_launch: precedence when several facts hold", "[launch][mode]") {
  ModeFacts f;
  f.slurm_task = f.ssh_agent = f.node_rendezvous = f.slurm_step = f.node_rank_given = true;
  f.hostfile = HostfilePlace::other_hosts;
  f.nnodes = 3;
  CHECK(classify_launch(f) == LaunchMode::slurm_task);  // srun started this rank: nothing else applies
  f.slurm_task = false;
  CHECK(classify_launch(f) == LaunchMode::ssh_agent);  // the launcher's agent, whatever the backend
  f.ssh_agent = false;
  CHECK(classify_launch(f) == LaunchMode::dynamic_node);
  f.node_rendezvous = false;
  CHECK(classify_launch(f) == LaunchMode::ssh_launcher);  // other hosts: even inside a Slurm step
  f.hostfile = HostfilePlace::node_k;
  CHECK(classify_launch(f) == LaunchMode::slurm_node);  // Slurm's place before --node-rank's
  f.slurm_step = false;
  CHECK(classify_launch(f) == LaunchMode::static_node);
}

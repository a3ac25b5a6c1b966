#pragma once
// The multi-node parts of `mtrain launch`: hosts from --hostfile and its filters, the ssh launch
// (store in the launcher, one agent per host), and the options of a node agent.
#include <optional>
#include <string>
#include <vector>

#include "mtrain/launch/host_probe.hpp"
#include "mtrain/launch/launch.hpp"
#include "mtrain/launch/node_agent.hpp"
#include "mtrain/topology/inventory.hpp"

namespace mtrain::launch {

std::vector<plan::ClusterNode> cluster_nodes(const topology::Inventory& hosts);

// Node K of a hostfile's world started by hand (static, uneven nodes allowed).
void apply_hostfile_node(plan::PlanOptions& p, const topology::Inventory& hosts, int node_rank);

// The ssh launch (and its --dry-run): the plan, the store at `ep` (decide_launch chose it), an
// agent per host.
int run_ssh_launch(LaunchOptions opt, const topology::Inventory& hosts, const plan::HostFacts& facts,
                   rendezvous::Endpoint ep, const EnvMap& env);

// A node agent's options from the flags (dynamic rendezvous, or started by the ssh launcher).
// --rdzv-endpoint HOST[:PORT]; without a port, launch.rdzv_port (--rdzv-port).
rendezvous::Endpoint endpoint_of(const MultiNodeOptions& m);

AgentOptions agent_options(const LaunchOptions& opt, const std::optional<topology::Inventory>& hosts,
                           const EnvMap& env);

}  // namespace mtrain::launch

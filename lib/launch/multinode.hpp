#pragma once
// The multi-node parts of `mtrain launch`: hosts from --hostfile and its filters, the ssh launch
// (store in the launcher, one agent per host), and the options of a node agent.
#include <optional>
#include <string>
#include <vector>

#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch.hpp"
#include "lib/launch/node_agent.hpp"
#include "lib/topology/inventory.hpp"

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

// Node K of a static job (`--nnodes N --node-rank K`, or `--hostfile F --node-rank K`) with
// --max-restarts: it runs as a node agent of a fixed-size node rendezvous so that a failure on any
// node restarts every node's ranks together (docs/multinode.md, "Restarts").
//   * node 0 holds the store on MASTER_ADDR:--rdzv-port (or --rdzv-endpoint); the others join it;
//   * nodes join as "node-K" (the hostfile's host name with a hostfile) and keep node rank K: the
//     store numbers them in that order, MIN = MAX = N;
//   * the token is MTRAIN_RDZV_TOKEN when set; else one derived from the endpoint (and --rdzv-id),
//     so that a torchrun-style command line works as is; `token_note` then says that such a store,
//     like torchrun's, accepts any peer that reaches it.
// `p` is this node's plan options after the hostfile was applied (nnodes, node_rank, master_addr).
AgentOptions static_agent_options(const LaunchOptions& opt, const plan::PlanOptions& p,
                                  const std::optional<topology::Inventory>& hosts, const EnvMap& env,
                                  std::string* token_note);

// The name a static node joins under: the hostfile's host, else "node-K".
std::string static_node_name(const plan::PlanOptions& p);

}  // namespace mtrain::launch

#pragma once
// One node of a dynamically formed job (`--rdzv-backend mtrain`, and every agent the ssh
// launcher starts): join the node rendezvous, take the node rank and rank range the agreement
// gives, supervise the local ranks while heartbeating, and end together with the other nodes.
//
//   * The node whose address is the endpoint's hosts the store there (listening only on that
//     address), unless the store is held elsewhere (the ssh launcher holds it).
//   * Progress lines while waiting: "mtrain: rendezvous: 2/3 nodes joined; waiting for: worker-2".
//   * A local rank failing or stalling is reported to the store, so every node stops; a failure
//     elsewhere (a report, or a node whose heartbeats stopped) stops this node's ranks with the
//     store's reason, which names the node.
//   * With --max-restarts K the store opens a new round for such a failure (K times for the
//     job): every agent stops its ranks, joins again, and runs the new assignment with
//     TORCHELASTIC_RESTART_COUNT = the job's restart count (store.hpp, "Restarts").
//   * With watch_stdin (ssh agents): EOF on stdin means the launcher's connection is gone.
//   * The agent records its process group in <record_dir>/<node name>.pgid so the launcher can
//     stop it by group (never by name).
#include <string>
#include <vector>

#include "lib/launch/scale_up.hpp"
#include "lib/launch/supervisor.hpp"
#include "lib/plan/plan.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/rendezvous/etcd_options.hpp"
#include "lib/rendezvous/clock.hpp"
#include "lib/rendezvous/endpoint.hpp"

namespace mtrain::launch {

struct AgentOptions {
  rendezvous::Endpoint endpoint;
  rendezvous::NodeCount nnodes;
  std::string node_name;                    // joins under this name; empty: the hostname
  std::string token;                        // MTRAIN_RDZV_TOKEN
  rendezvous::Duration join_timeout{300000};
  rendezvous::Duration last_call{30000};
  rendezvous::Duration node_timeout{30000};  // heartbeat silence that counts as a dead node
  int max_restarts = 0;                     // --max-restarts: the store's (the job's) restart budget
  std::vector<std::string> expected_hosts;  // from a hostfile: the names and node-rank order
  bool store_elsewhere = false;             // do not host the store even if the endpoint is ours
  bool watch_stdin = false;
  bool quiet_progress = false;              // no rendezvous progress lines (the ssh launcher prints them)
  int expected_node_rank = -1;              // --node-rank given: the agreement must match it
  std::string record_dir;                   // where the pgid record goes; empty: none
  ScaleUp scale_up = ScaleUp::checkpoint;   // --scale-up: arrivals while running (scale_up.hpp)
  bool etcd = false;                        // --rdzv-backend etcd: the rendezvous is kept there
  rendezvous::EtcdOptions etcd_client;      // its members (endpoint above: the first, for routes)
  config::EtcdApi etcd_api = config::EtcdApi::Grpc;  // and how to speak to them
};

// Runs the node; `p` is this node's plan options (program, GPUs, run dir…), `facts` this host.
// Returns the exit code like supervise().
int run_node_agent(plan::PlanOptions p, const plan::HostFacts& facts, const AgentOptions& a, const SuperviseOptions& so,
                   ProcessRunner& runner);

}  // namespace mtrain::launch

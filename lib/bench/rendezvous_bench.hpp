#pragma once
// `mtrain bench rendezvous`: the real rendezvous store (rendezvous::Server on 127.0.0.1, an
// ephemeral port) and N simulated node agents (SimulatedNodes: real sockets, real protocol,
// one thread) in this process, for each N:
//   * form: from every node connecting at once until the last one holds its assignment (wall
//     time, and the store thread's CPU time: the part that does not depend on machine load);
//   * heartbeat CPU: the store's I/O-thread CPU time per second while every node heartbeats at
//     the agents' cadence (every 2 s: --node-timeout 30 s / 5), and per heartbeat;
//   * store memory: growth of this process's resident memory while the store starts and while
//     the job forms (creating the simulated nodes is left out; their per-request buffers are in).
#include <functional>
#include <string>
#include <vector>

#include "lib/bench/report.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/rendezvous/clock.hpp"
#include "lib/rendezvous/endpoint.hpp"

namespace mtrain::bench {

struct RendezvousBenchOptions {
  std::vector<int> nodes = {64, 512, 4096};
  int slots = 8;                                     // ranks per simulated node
  rendezvous::Duration heartbeat_interval{2000};     // the node agent's cadence at --node-timeout 30
  rendezvous::Duration heartbeat_span{6000};         // how long heartbeat CPU is measured
  rendezvous::Duration form_timeout{60000};
  std::vector<std::string> backends = {"mtrain"};  // mtrain, etcd (gRPC), etcd-gateway (its JSON gateway)
  std::string etcd_endpoints;  // a running cluster's members; empty: a local 3-member cluster is started
};

struct RendezvousRun {
  std::string backend = "mtrain";
  int nodes = 0;
  double form_s = 0;
  double form_cpu_ms = 0;            // the store thread's CPU time while the job formed
  uint64_t reconnects = 0;
  double heartbeats_per_s = 0;
  double store_cpu_ms_per_s = 0;     // store CPU per second of heartbeating
  double store_cpu_us_per_beat = 0;
  double rss_delta_mib = 0;
  int max_connections = 0;
};

// One N: store + simulated nodes; mtrain::Error (exit 1) if the job does not form.
RendezvousRun run_rendezvous_once(int nodes, const RendezvousBenchOptions& o);

// One N on etcd (rendezvous_etcd_bench.cpp): N real EtcdRendezvous agents, a thread and an etcd
// client (speaking `api`) each, join the cluster at once, then heartbeat. `etcd_cpu` gives the
// members' CPU seconds so far (none: a cluster the bench did not start, whose CPU it cannot see).
RendezvousRun run_etcd_rendezvous_once(int nodes, const RendezvousBenchOptions& o,
                                       const std::vector<rendezvous::Endpoint>& members,
                                       const std::function<double()>& etcd_cpu, config::EtcdApi api);

BenchReport rendezvous_report(const std::vector<RendezvousRun>& runs, const RendezvousBenchOptions& o);

// Checks the descriptor limit for the largest N first (raising the soft limit when it can).
BenchReport run_rendezvous_bench(const RendezvousBenchOptions& o);

}  // namespace mtrain::bench

#include "lib/bench/rendezvous_bench.hpp"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "lib/bench/etcd_local.hpp"
#include "lib/bench/rendezvous_sim.hpp"
#include "lib/core/error.hpp"
#include "lib/rendezvous/capacity.hpp"
#include "lib/rendezvous/etcd_http.hpp"
#include "lib/rendezvous/server.hpp"
#include "lib/rendezvous/token.hpp"

namespace mtrain::bench {

namespace {

double resident_mib() {
  std::ifstream in("/proc/self/statm");
  long size = 0, resident = 0;
  in >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// Descriptors one N needs here: the store's side and the simulated nodes' side of every connection.
long descriptors_for(int nodes) { return rendezvous::wanted_fd_limit(nodes) + nodes + 64; }

}  // namespace

RendezvousRun run_rendezvous_once(int nodes, const RendezvousBenchOptions& o) {
  rendezvous::ServerOptions so;
  so.listen = {"127.0.0.1", 0};
  so.store.min_nodes = so.store.max_nodes = nodes;
  so.store.token = rendezvous::generate_token();
  so.store.join_timeout = o.form_timeout;
  so.store.heartbeat_timeout = std::max(rendezvous::Duration(30000), 5 * o.heartbeat_interval);
  so.store.run_id = "bench";

  SimOptions sim;
  sim.server = so.listen;
  sim.token = so.store.token;
  sim.nodes = nodes;
  sim.slots = o.slots;

  RendezvousRun run;
  run.nodes = nodes;
  rendezvous::Server server(so);
  const double before_store = resident_mib();
  server.start();
  const double store_started = resident_mib() - before_store;
  sim.server.port = server.port();
  run.max_connections = server.max_connections();
  auto sims = std::make_unique<SimulatedNodes>(sim);
  const double before_form = resident_mib();
  const double cpu_before_form = server.cpu_seconds();
  run.form_s = sims->form(o.form_timeout);
  run.form_cpu_ms = (server.cpu_seconds() - cpu_before_form) * 1e3;
  run.reconnects = sims->reconnects();
  run.rss_delta_mib = store_started + std::max(0.0, resident_mib() - before_form);

  auto s = server.status();
  if (s.phase != rendezvous::Phase::running || !s.assignment || static_cast<int>(s.assignment->nodes.size()) != nodes ||
      s.assignment->world_size != nodes * o.slots)
    throw Error(fmt::format("the store did not form a job of {} nodes: {}", nodes, s.progress), "", kExitFailure);
  for (int k : {0, nodes / 2, nodes - 1}) {
    const auto& a = sims->assignment(k);
    if (a.nnodes != nodes || a.self.first_rank != a.self.node_rank * o.slots)
      throw Error(fmt::format("simulated node {} got an inconsistent assignment (node rank {}, first rank {})", k,
                              a.self.node_rank, a.self.first_rank),
                  "", kExitFailure);
  }

  double cpu0 = server.cpu_seconds();
  uint64_t beats = sims->heartbeat(o.heartbeat_interval, o.heartbeat_span);
  double cpu = server.cpu_seconds() - cpu0;
  double span_s = std::chrono::duration<double>(o.heartbeat_span).count();
  run.heartbeats_per_s = static_cast<double>(beats) / span_s;
  run.store_cpu_ms_per_s = cpu * 1e3 / span_s;
  run.store_cpu_us_per_beat = beats ? cpu * 1e6 / static_cast<double>(beats) : 0;
  sims.reset();
  server.stop();
  return run;
}

BenchReport rendezvous_report(const std::vector<RendezvousRun>& runs, const RendezvousBenchOptions& o) {
  BenchReport r;
  r.table.headers = {"backend",      "nodes",           "form(s)",      "form CPU(ms)",   "reconnects",
                     "heartbeats/s", "store CPU(ms/s)", "CPU/beat(us)", "store RSS(MiB)", "connection cap"};
  json rows = json::array();
  std::map<std::string, Series> form;
  // Negative: not measured (etcd: its members' memory and connections; a cluster not started here: its CPU).
  auto num = [](double v, const char* f) { return v < 0 ? std::string("-") : fmt::format(fmt::runtime(f), v); };
  for (const auto& x : runs) {
    r.table.rows.push_back({x.backend, std::to_string(x.nodes), fmt::format("{:.3f}", x.form_s),
                            num(x.form_cpu_ms, "{:.0f}"), std::to_string(x.reconnects),
                            fmt::format("{:.0f}", x.heartbeats_per_s), num(x.store_cpu_ms_per_s, "{:.1f}"),
                            num(x.store_cpu_us_per_beat, "{:.1f}"), num(x.rss_delta_mib, "{:.1f}"),
                            x.max_connections < 0 ? "-" : std::to_string(x.max_connections)});
    auto opt = [](double v) { return v < 0 ? json(nullptr) : json(v); };
    rows.push_back({{"backend", x.backend},
                    {"nodes", x.nodes},
                    {"form_s", x.form_s},
                    {"form_cpu_ms", opt(x.form_cpu_ms)},
                    {"reconnects", x.reconnects},
                    {"heartbeats_per_s", x.heartbeats_per_s},
                    {"store_cpu_ms_per_s", opt(x.store_cpu_ms_per_s)},
                    {"store_cpu_us_per_beat", opt(x.store_cpu_us_per_beat)},
                    {"rss_delta_mib", opt(x.rss_delta_mib)},
                    {"max_connections", x.max_connections < 0 ? json(nullptr) : json(x.max_connections)}});
    auto& series = form[x.backend];
    series.name = x.backend + ": time to form (s)";
    series.points.emplace_back(x.nodes, x.form_s);
  }
  r.notes.push_back(fmt::format(
      "# store on 127.0.0.1 and N simulated agents (one thread, real sockets and protocol, each from its own 127.x "
      "address) in this process; {} ranks per node; waiting agents' polls are held by the store until the job forms",
      o.slots));
  r.notes.push_back(fmt::format("# form = every node connects at once → the last one holds its assignment (form CPU: "
                                "the store thread's share); heartbeat CPU = the store thread's CPU time over {:.0f} s "
                                "of one heartbeat per node every {:.1f} s",
                                std::chrono::duration<double>(o.heartbeat_span).count(),
                                std::chrono::duration<double>(o.heartbeat_interval).count()));
  r.notes.push_back("# store RSS = resident memory growth while the store started and the job formed (not creating "
                    "the simulated nodes; their request buffers are included)");
  const auto asked = [&](const char* b) {
    return std::find(o.backends.begin(), o.backends.end(), b) != o.backends.end();
  };
  if (asked("etcd") || asked("etcd-gateway"))
    r.notes.push_back(
        o.etcd_endpoints.empty()
            ? "# etcd: N real etcd-rendezvous agents (a thread and an etcd client each: gRPC; etcd-gateway: HTTP/1.1 "
              "to etcd's JSON gateway) against a local 3-member "
              "cluster on 127.0.0.1; its CPU is the three members' (/proc/PID/stat), summed; the agents' "
              "per-request deadline is 30 s here (3 s in mtrain launch)"
            : "# etcd: N real etcd-rendezvous agents against " + o.etcd_endpoints + " (its CPU is not visible here)");
  r.doc = {{"bench", "rendezvous"}, {"slots", o.slots}, {"rows", rows}};
  r.plot.title = "mtrain bench rendezvous: time to form a job";
  r.plot.xlabel = "nodes";
  r.plot.ylabel = "seconds";
  r.plot.logx = true;
  for (auto& [name, series] : form) r.plot.series.push_back(series);
  return r;
}

BenchReport run_rendezvous_bench(const RendezvousBenchOptions& o) {
  if (o.nodes.empty()) throw Error("--nodes needs at least one node count");
  int largest = *std::max_element(o.nodes.begin(), o.nodes.end());
  long have = rendezvous::raise_fd_limit(descriptors_for(largest));
  if (have < descriptors_for(largest))
    throw Error(fmt::format("{} simulated nodes and their store need about {} open files in this process, but the "
                            "limit is {} (RLIMIT_NOFILE, hard limit included)",
                            largest, descriptors_for(largest), have),
                fmt::format("Raise it (`ulimit -n {}`) or ask for fewer --nodes.", descriptors_for(largest)));
  std::vector<RendezvousRun> runs;
  for (const auto& backend : o.backends) {
    if (backend == "mtrain") {
      for (int n : o.nodes) runs.push_back(run_rendezvous_once(n, o));
    } else if (backend == "etcd" || backend == "etcd-gateway") {
      std::unique_ptr<LocalEtcd> local;
      std::vector<rendezvous::Endpoint> members;
      std::function<double()> cpu;
      if (o.etcd_endpoints.empty()) {
        local = std::make_unique<LocalEtcd>();
        members = local->endpoints();
        cpu = [&local] { return local->cpu_seconds(); };
      } else {
        members = rendezvous::parse_etcd_endpoints(o.etcd_endpoints, "--etcd-endpoint");
      }
      const auto api = backend == "etcd" ? config::EtcdApi::Grpc : config::EtcdApi::Gateway;
      for (int n : o.nodes) runs.push_back(run_etcd_rendezvous_once(n, o, members, cpu, api));
    } else {
      throw Error(fmt::format("--backend '{}' is not a rendezvous backend", backend),
                  "Give mtrain, etcd (its gRPC API), etcd-gateway (its JSON gateway), or several: mtrain,etcd.");
    }
  }
  return rendezvous_report(runs, o);
}

}  // namespace mtrain::bench

// `mtrain bench rendezvous --backend etcd`: the etcd rendezvous (lib/rendezvous/etcd_rendezvous)
// as N node agents run it, each with its own thread and etcd client (gRPC, or the JSON gateway's
// HTTP client with --backend etcd-gateway): the protocol's round trips and watches are what is
// measured, so nothing is simulated but the ranks.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "lib/bench/rendezvous_bench.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/etcd_client.hpp"
#include "lib/rendezvous/etcd_rendezvous.hpp"
#include "lib/rendezvous/token.hpp"

namespace mtrain::bench {

namespace {

using Clock = std::chrono::steady_clock;

// The agents' per-request deadline is 3 s; a whole job joining at once against three members that
// share this machine's cores queues longer than that (the bench's note says so), and the time
// to form is what is measured here, not whether the first requests beat the deadline.
constexpr rendezvous::Duration kEtcdBenchOpTimeout{30000};

// Runs body(k) for every agent on its own thread; the first error (by any) is rethrown after all
// end. The threads are made first and released together: making 512 threads is the bench's cost,
// not the agents' (a node's agent is running before it joins), so the clock starts at the release
// and `started` returns when it did.
Clock::time_point on_every_agent(int nodes, const std::function<void(int)>& body) {
  std::mutex mu;
  std::condition_variable cv;
  bool go = false;
  std::string first_error;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(nodes));
  for (int k = 0; k < nodes; ++k)
    threads.emplace_back([&, k] {
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return go; });
      }
      try {
        body(k);
      } catch (const std::exception& e) {
        std::lock_guard lock(mu);
        if (first_error.empty()) first_error = fmt::format("simulated node {}: {}", k, e.what());
      }
    });
  Clock::time_point started;
  {
    std::lock_guard lock(mu);
    go = true;
    started = Clock::now();
  }
  cv.notify_all();
  for (auto& t : threads) t.join();
  if (!first_error.empty()) throw Error(first_error, "", kExitFailure);
  return started;
}

}  // namespace

RendezvousRun run_etcd_rendezvous_once(int nodes, const RendezvousBenchOptions& o,
                                       const std::vector<rendezvous::Endpoint>& members,
                                       const std::function<double()>& etcd_cpu, config::EtcdApi api) {
  const std::string token = rendezvous::generate_token();
  std::vector<std::unique_ptr<rendezvous::EtcdRendezvous>> agents;
  std::shared_ptr<rendezvous::EtcdKv> admin;
  for (int k = 0; k < nodes; ++k) {
    rendezvous::EtcdOptions eo;
    eo.endpoints = members;
    eo.op_timeout = kEtcdBenchOpTimeout;
    auto kv = launch::connect_etcd(eo, api);
    if (!admin) admin = kv;
    rendezvous::EtcdRendezvousOptions ro;
    ro.run_id = fmt::format("bench-{}-{}", nodes, token.substr(0, 8));
    ro.token = token;
    ro.node_id = fmt::format("n{:05d}", k);
    ro.host = fmt::format("node-{}", k);
    ro.slots = o.slots;
    ro.min_nodes = ro.max_nodes = nodes;
    ro.join_timeout = o.form_timeout;
    ro.node_timeout = std::max(rendezvous::Duration(30000), 5 * o.heartbeat_interval);
    agents.push_back(std::make_unique<rendezvous::EtcdRendezvous>(ro, kv));
  }
  RendezvousRun run;
  run.backend = api == config::EtcdApi::Grpc ? "etcd" : "etcd-gateway";
  run.nodes = nodes;
  const bool see_cpu = static_cast<bool>(etcd_cpu);

  // Form: every agent joins at once; the time until the last one holds its assignment.
  std::vector<rendezvous::JoinResult> joined(static_cast<size_t>(nodes));
  const double cpu0 = see_cpu ? etcd_cpu() : 0;
  const auto t0 =
      on_every_agent(nodes, [&](int k) { joined[static_cast<size_t>(k)] = agents[static_cast<size_t>(k)]->join(); });
  run.form_s = std::chrono::duration<double>(Clock::now() - t0).count();
  run.form_cpu_ms = see_cpu ? (etcd_cpu() - cpu0) * 1e3 : -1;
  for (int k : {0, nodes / 2, nodes - 1}) {
    const auto& a = joined[static_cast<size_t>(k)].assignment;
    if (a.nnodes != nodes || a.self.first_rank != a.self.node_rank * o.slots)
      throw Error(fmt::format("simulated node {} got an inconsistent assignment (node rank {}, first rank {})", k,
                              a.self.node_rank, a.self.first_rank),
                  "", kExitFailure);
  }

  // Heartbeats: each agent once per interval, phases spread evenly, for the span.
  std::atomic<uint64_t> beats{0};
  const double cpu1 = see_cpu ? etcd_cpu() : 0;
  const auto h0 = Clock::now(), h_end = h0 + o.heartbeat_span;
  (void)on_every_agent(nodes, [&](int k) {
    auto next = h0 + o.heartbeat_interval * k / nodes;
    for (;;) {
      std::this_thread::sleep_until(next);
      if (Clock::now() >= h_end) return;
      const auto st = agents[static_cast<size_t>(k)]->heartbeat();
      if (st.phase != rendezvous::Phase::running)
        throw Error(fmt::format("the job left its round while heartbeating: {}", st.reason), "", kExitFailure);
      ++beats;
      next += o.heartbeat_interval;
    }
  });
  const double span_s = std::chrono::duration<double>(Clock::now() - h0).count();
  const double cpu = see_cpu ? etcd_cpu() - cpu1 : 0;
  run.heartbeats_per_s = static_cast<double>(beats) / span_s;
  run.store_cpu_ms_per_s = see_cpu ? cpu * 1e3 / span_s : -1;
  run.store_cpu_us_per_beat = see_cpu && beats ? cpu * 1e6 / static_cast<double>(beats) : -1;
  run.rss_delta_mib = -1;
  run.max_connections = -1;
  // The job's keys go now; the leases (no keys left) expire by themselves.
  admin->delete_prefix(agents.front()->job_prefix());
  return run;
}

}  // namespace mtrain::bench

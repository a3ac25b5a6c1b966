// The rendezvous store at scale, in process: 512 simulated nodes (one thread, real sockets)
// join the real store on loopback and every one gets a consistent share of the assignment.
#include <catch2/catch.hpp>

#include <set>

#include "lib/bench/rendezvous_sim.hpp"
#include "lib/rendezvous/capacity.hpp"
#include "lib/rendezvous/server.hpp"

using namespace mtrain;
using std::chrono::milliseconds;

TEST_CASE("rendezvous at scale: 512 nodes form and heartbeat over loopback", "[bench][rendezvous]") {
  const int n = 512;
  const long need = rendezvous::wanted_fd_limit(n) + n + 64;
  if (rendezvous::raise_fd_limit(need) < need) {
    WARN("skipped: needs " << need << " open files (RLIMIT_NOFILE); raise `ulimit -n`");
    return;
  }
  rendezvous::ServerOptions so;
  so.listen = {"127.0.0.1", 0};
  so.store.min_nodes = 2;  // MIN:MAX with a long last call: only reaching MAX forms the job
  so.store.max_nodes = n;
  so.store.last_call = milliseconds(600000);
  so.store.token = "scale-test-token-0123456789";
  so.store.run_id = "scale";
  rendezvous::Server server(so);
  server.start();
  CHECK(server.max_connections() >= 2 * n);

  bench::SimOptions sim;
  sim.server = {"127.0.0.1", server.port()};
  sim.token = so.store.token;
  sim.nodes = n;
  sim.slots = 2;
  bench::SimulatedNodes nodes(sim);
  nodes.form(milliseconds(60000));
  std::set<int> node_ranks;
  for (int k = 0; k < n; ++k) {
    const auto& a = nodes.assignment(k);
    node_ranks.insert(a.self.node_rank);
    CHECK(a.nnodes == n);
    CHECK(a.world_size == 2 * n);
    CHECK(a.self.first_rank == 2 * a.self.node_rank);
    CHECK(a.self.host == "node-" + std::to_string(k));
  }
  CHECK(node_ranks.size() == static_cast<size_t>(n));
  CHECK(server.counters().over_capacity == 0);
  CHECK(nodes.heartbeat(milliseconds(500), milliseconds(1000)) >= static_cast<uint64_t>(n));
  CHECK(server.status().phase == rendezvous::Phase::running);
}

#pragma once
// Many node agents' rendezvous clients in one thread: for `mtrain bench rendezvous` and the
// scale tests. Each simulated node speaks the real protocol (frames, token, join, heartbeat)
// over its own TCP connection to the real store, exactly as rendezvous::Client does — join,
// then heartbeats (each may be held by the store for `hold`, then a pause of poll_interval)
// until the job forms, reconnect and join again after a lost connection — but thousands of
// them share one Boost.Asio loop instead of a thread each.
//
// Node k connects from its own loopback address 127.0.(1 + k/250).(1 + k%250) when the store
// listens on a loopback address (as real nodes come from their own addresses; the store limits
// unauthenticated connections per source address).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/rendezvous/assignment.hpp"
#include "lib/rendezvous/clock.hpp"
#include "lib/rendezvous/endpoint.hpp"

namespace mtrain::bench {

struct SimOptions {
  rendezvous::Endpoint server;
  std::string token;
  int nodes = 64;
  int slots = 8;                               // ranks per node
  rendezvous::Duration poll_interval{200};     // rendezvous::ClientOptions' defaults
  rendezvous::Duration hold{1000};
  std::string host_prefix = "node-";
};

class SimulatedNodes {
 public:
  explicit SimulatedNodes(SimOptions o);
  ~SimulatedNodes();
  SimulatedNodes(const SimulatedNodes&) = delete;
  SimulatedNodes& operator=(const SimulatedNodes&) = delete;

  // Every node connects and joins at once; returns the seconds until the last one has received
  // its assignment. mtrain::Error when the store refuses a node, the job fails, or `timeout`
  // passes first (saying how many nodes got their assignment).
  double form(rendezvous::Duration timeout);

  // Every node heartbeats once per `interval` (their phases spread evenly over it) for `span`;
  // returns the heartbeats answered. mtrain::Error when the store reports a failure.
  uint64_t heartbeat(rendezvous::Duration interval, rendezvous::Duration span);

  // What node k was assigned (after form()).
  const rendezvous::NodeAssignment& assignment(int k) const;
  // Connections lost or refused and made again (over capacity, evicted, …).
  uint64_t reconnects() const;

  class Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace mtrain::bench

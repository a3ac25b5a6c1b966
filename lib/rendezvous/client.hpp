#pragma once
// A node agent's side of the rendezvous: join, wait for the agreement while reporting
// progress, then heartbeat until the job ends. Every network operation has a deadline; the
// connection is kept open between requests and re-opened (within the deadline) if it drops.
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "lib/rendezvous/assignment.hpp"
#include "lib/rendezvous/clock.hpp"
#include "lib/rendezvous/endpoint.hpp"
#include "lib/rendezvous/frame.hpp"
#include "lib/rendezvous/store.hpp"

namespace mtrain::rendezvous {

struct ClientOptions {
  Endpoint server;
  std::string token;
  std::string node_id;  // empty: a random id (one per agent process)
  std::string host;     // this node's name as the job knows it (hostfile name)
  std::string addr;     // how other nodes reach this one; empty: host
  int slots = 1;        // local ranks this node runs
  Duration join_timeout{600000};  // connect + join + wait for the agreement
  Duration op_timeout{10000};     // one request and its reply
  Duration poll_interval{200};    // pause between polls while waiting for the agreement
  Duration hold{1000};            // the store may hold a waiting reply this long ("wait_ms", long poll)
  size_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Called when the store's progress line changes while waiting ("2/3 nodes joined; …").
  std::function<void(const std::string&)> on_progress;
};

struct JoinResult {
  int node_rank = 0;
  NodeAssignment assignment;  // this node's share (not the whole table)
  int round = 0;              // the store's round this assignment belongs to
  int restarts = 0;           // the job's restart count (TORCHELASTIC_RESTART_COUNT)
  std::string restart_reason;      // round > 0: why this round was opened
  std::vector<std::string> lost;   // nodes lost over the job's life (the most recent few)
  const AssignedNode& self() const { return assignment.self; }
};

struct JobState {
  Phase phase = Phase::running;
  std::string reason;  // when failed: why, naming the node(s)
  int round = 0;       // a round newer than the node's own: the job is restarting
  std::string restart_reason;
  bool membership_change = false;  // the new round takes in waiting nodes (scale up), not a failure
};

// What a node agent does with the rendezvous, whatever keeps it: the mtrain store (Client) or
// an etcd cluster (EtcdRendezvous). Errors are mtrain::Error (exit 1), as Client's say below.
class Membership {
 public:
  virtual ~Membership() = default;
  virtual JoinResult join() = 0;
  virtual JobState heartbeat() = 0;
  virtual JobState report_failure(const std::string& reason) = 0;
  virtual JobState leave() = 0;
  virtual const std::string& node_id() const = 0;
};

class Client final : public Membership {
 public:
  explicit Client(ClientOptions options);
  ~Client() override;

  // Join and block until the job forms. mtrain::Error (exit 1) when the rendezvous fails or
  // times out (naming the missing nodes), when the store refuses this node, or when it cannot
  // be reached before join_timeout.
  JoinResult join() override;
  // One keep-alive; returns the job's phase ("failed" carries the reason naming the node).
  JobState heartbeat() override;
  // Tell the store this node's ranks failed; every node sees "failed" on its next heartbeat.
  JobState report_failure(const std::string& reason) override;
  // This node is done (its ranks exited 0).
  JobState leave() override;

  // One raw request (token and node id are added) with the op deadline; for the above and tests.
  nlohmann::json request(nlohmann::json message);

  const std::string& node_id() const override;

 private:
  class Conn;
  JobState job_state(const nlohmann::json& reply) const;
  ClientOptions opt_;
  std::unique_ptr<Conn> conn_;
};

}  // namespace mtrain::rendezvous

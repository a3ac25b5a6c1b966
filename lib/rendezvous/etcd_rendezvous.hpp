#pragma once
// The node rendezvous kept in an etcd cluster (--rdzv-backend etcd): no agent holds state the
// job cannot lose. Every agent runs this protocol against the cluster (through EtcdKv):
//
//   P = <prefix><run id>/         the job's keys; all removed when the job finishes
//   P guard                       HMAC(token, P): a job with another token is refused here
//   P state                       {"round","restarts","reason","membership_change","failed"}
//   P r/<round>/n/<node id>       {host, addr, slots}; bound to the node's lease, so a node
//                                 that stops keeping its lease alive (heartbeats) disappears
//   P r/<round>/agreed            the round's nodes in node-rank order with their ranks, after
//                                 an HMAC under the token (etcd_agreement.hpp): each agent reads
//                                 its own line, allocating nothing per node
//   P r/<round>/done/<node id>    the node's ranks finished
//
// A node joins with one transaction that checks the guard and the state, writes its member key
// and reads the agreement and the member count; with the lease's grant and the watch that is
// the whole join for every node but the one that completes the round.
// Join order is the member keys' create revision (in a later round, the last round's nodes
// first, in their order there). The round forms when MAX nodes are in, or
// when the last-call window that opens once MIN are in has passed: the first agent to see it
// creates "agreed" in a transaction (create revision 0), every other agent reads that one.
// Waiting is an etcd watch on the round's agreement key, bounded by the last call, the time the
// lease needs its next keep-alive and the deadlines; no polling loop. The watch's event carries
// the agreement, so a node woken by it reads nothing more; any other wake reads O(1) (the
// agreement, the state, a member count): only the agent that completes the round lists members.
// Heartbeats count the round's member and done keys; the list is read only when a node is gone.
// A node whose member key is gone while the round runs is lost; a node reporting its ranks
// failed likewise opens the next round: "state" moves from round r to r+1 by compare-and-swap
// on its mod revision (one winner), while restarts are left; else state says failed, with the
// reason naming the node(s). A node that arrives while a round runs with fewer than MAX nodes
// moves "state" to the next round itself (scale up: a membership change, restarts left as they
// are, by the same compare-and-swap), unless scale up is off or a node of the round has finished;
// the running nodes see the round change on their next heartbeat and re-join. Otherwise it waits
// for the next round.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/rendezvous/client.hpp"
#include "lib/rendezvous/etcd_agreement.hpp"
#include "lib/rendezvous/etcd_kv.hpp"

namespace mtrain::rendezvous {

inline constexpr const char* kDefaultEtcdPrefix = "/mtrain/rdzv/";

struct EtcdRendezvousOptions {
  std::string prefix = kDefaultEtcdPrefix;
  std::string run_id;  // the job's keys live under prefix + run_id + "/"
  std::string token;
  std::string node_id;  // empty: a random id
  std::string host, addr;
  int slots = 1;
  int min_nodes = 1, max_nodes = 1;
  int max_restarts = 0;
  int master_port = 29500;
  Duration join_timeout{600000};
  Duration last_call{30000};
  Duration node_timeout{30000};  // the lease's TTL: silence after which a node is lost
  bool scale_up = false;  // an arrival opens the next round (launch/scale_up.hpp)
  std::function<void(const std::string&)> on_progress;
};

class EtcdRendezvous final : public Membership {
 public:
  // `kv` is shared with other objects of the same process (the report connection).
  EtcdRendezvous(EtcdRendezvousOptions options, std::shared_ptr<EtcdKv> kv, const Clock& clock = real_clock());
  ~EtcdRendezvous() override;
  JoinResult join() override;
  JobState heartbeat() override;
  JobState report_failure(const std::string& reason) override;
  JobState leave() override;
  const std::string& node_id() const override { return opt_.node_id; }
  std::string job_prefix() const { return job_; }

 private:
  struct State {
    int round = 0, restarts = 0;
    std::string reason;
    bool membership_change = false, failed = false;
    int64_t mod_revision = 0;
  };
  // The round this node entered: the state it saw, the agreement if the round had formed, and
  // how many nodes were in it then.
  struct Joined {
    State state;
    RangeResult agreed;
    int64_t count = 0;
  };
  Joined join_round(std::optional<KeyValue> known);
  static std::string new_state();
  State read_state();
  State state_of(const KeyValue& kv) const;
  std::string agreement_value(const std::vector<const KeyValue*>& members, const std::string& rp) const;
  void keep_lease();
  // The steps of join(), each a part of the wait for one round.
  JoinResult take_place(Agreement agreed, NodeAssignment place, const State& s);
  void wait_for_next_round(int r, int64_t after_revision, TimePoint deadline);
  std::optional<KeyValue> form_round(int r, const std::string& rp);
  void report_waiting(int64_t count, int64_t last_count, const std::string& rp, TimePoint now, TimePoint deadline);
  JobState job_state(const State& s) const;
  // Open the next round or fail the job (one writer wins); returns the state after.
  State fail_or_restart(const std::string& reason);
  // This node came after round `s.round` formed with `running` nodes: open the next round for
  // it if the job scales up and may (fewer than MAX, nobody finished). Whether `state` moved.
  bool scale_up_for(const State& s, size_t running);
  // The nodes of the round before first, in their node-rank order there, then newcomers in join
  // order (as the mtrain store orders them): a node arriving or re-joining first does not take
  // node 0, the master's host, from the survivors.
  void order_survivors_first(std::vector<const KeyValue*>& members, int r) const;
  std::string round_prefix(int round) const;

  EtcdRendezvousOptions opt_;
  std::shared_ptr<EtcdKv> kv_;
  const Clock& clock_;
  std::string job_;
  int64_t lease_ = 0;
  TimePoint lease_refreshed_{};
  int round_ = -1;  // the round this node last formed in
  std::optional<Agreement> agreed_;  // that round's agreement: its nodes, in node-rank order
  int round_nodes() const;  // how many (0 before the first round)
};

}  // namespace mtrain::rendezvous

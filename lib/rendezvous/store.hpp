#pragma once
// The rendezvous store's protocol: a state machine over decoded request messages and time.
// It does no I/O and reads time only from its Clock, so tests drive it message by message
// with a ManualClock; the Server wraps it in Boost.Asio and a mutex.
//
// Requests (JSON objects; every one carries "token" and "node", the node's random id):
//   {"op":"join", "host":H, "slots":N, "addr":A?}  enter the rendezvous (idempotent per node id)
//   {"op":"heartbeat", "brief":B?}                 I am alive; what is the state? (brief, while
//                                                  running: only phase, round and restarts)
//   {"op":"fail", "reason":R}                      my ranks failed: tear the job down
//   {"op":"leave"}                                 I finished (or gave up before the start)
// Every reply is {"ok":true, "phase":…, "progress":…, …} or {"ok":false, "error":…}; once the
// job has formed, replies carry "node_rank" and that node's "assignment" (NodeAssignment, not the
// whole table); when it has failed, "reason" and "failed_nodes". A message without the job's
// token, or malformed, is answered with an error and the connection is closed.
//
// Scale: a reply's size does not grow with the node count (host lists in progress lines and
// replies name at most kListedHosts, then "and N more"); a request costs O(log N) apart from
// the time-driven checks, which run at most once per kTickGranularity; the progress line is
// rebuilt only after a change (version()).
//
// Phases: joining → running (the agreement) → finished, or → failed from joining (join timeout)
// or running (a node missed heartbeats, reported a failure, or the launcher aborted).
// Agreement: as soon as MAX nodes (or every expected host) joined, or when the last-call window
// that opens when MIN nodes have joined has passed. Node ranks follow the expected host order
// when the server was given one, else join order.
//
// Restarts (max_restarts K > 0): the job, not each node, keeps the count. A failure while
// running — a node reports its ranks failed, or a node misses its heartbeats (it is lost and
// removed) — opens a new round instead of failing, K times: the phase goes back to joining,
// every reply says "round" r+1, and each node's agent stops its ranks and joins again (same
// node id). The round forms as soon as every surviving node of the last round is back (and
// at least MIN), or on the usual MAX / last-call rules; a node already silent for half the
// heartbeat timeout when the round opens is not waited for beyond that timeout (its silence
// keeps counting: a dead node whose peers reported first); node ranks are reassigned contiguously
// (survivors keep their order, newcomers follow); "restarts" (TORCHELASTIC_RESTART_COUNT) is
// the same on every node. A node that arrives while the job runs waits for the next round
// (phase "joining" in its replies) and does not cause one: a membership change is not a
// failure (unless StoreOptions::scale_up: then it opens a new round at once, with the same
// restart count). Fewer than MIN nodes within join_timeout of the round opening fails the job,
// naming the nodes lost. The (K+1)-th failure fails the job as without restarts. A failure
// after some node already finished (left) fails the job: its work cannot be redone.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/rendezvous/assignment.hpp"
#include "lib/rendezvous/clock.hpp"

namespace mtrain::rendezvous {

// Host lists in progress lines and replies name this many, then "and N more".
inline constexpr size_t kListedHosts = 8;
// handle() applies the time-driven checks (an O(N) scan) at most this often; the server ticks too.
inline constexpr Duration kTickGranularity{10};

enum class Phase { joining, running, finished, failed };
const char* phase_name(Phase p);

struct StoreOptions {
  int min_nodes = 1;
  int max_nodes = 1;
  Duration join_timeout{600000};     // from the store's start until the job must have formed
  Duration last_call{30000};         // extra wait for more nodes once MIN have joined
  Duration heartbeat_timeout{30000}; // silence after which a node counts as gone
  std::vector<std::string> expected_hosts;  // when known: node-rank order and names in progress
  std::string token;
  int master_port = 29500;
  std::string run_id;
  int max_restarts = 0;  // failures the job survives by re-forming (see "Restarts" above)
  // Scale up (see "Restarts" above): a node that arrives while the job runs, with room below
  // MAX, opens a new round at once instead of waiting for the next failure. Not a failure: the
  // restart count stays; the round's replies say "membership_change" so that agents can let
  // their ranks save first (lib/launch/scale_up.hpp).
  bool scale_up = false;
};

struct StoreStatus {
  Phase phase = Phase::joining;
  std::vector<std::string> joined;        // hosts, in join order
  std::vector<std::string> waiting_for;   // expected hosts that have not joined
  std::string progress;                   // one line for people ("2/3 nodes joined; waiting for: worker-2")
  std::string reason;                     // why it failed, naming the node(s)
  std::vector<std::string> failed_nodes;  // the hosts blamed
  std::optional<Assignment> assignment;
  int round = 0;                          // 0, then +1 per restart
  int restarts = 0;                       // failures survived so far (TORCHELASTIC_RESTART_COUNT)
  std::string restart_reason;             // why the last restart happened
  bool membership_change = false;         // the last new round took in waiting nodes (not a failure)
  std::vector<std::string> lost;          // hosts lost (silent) over the job's life
};

struct Reply {
  nlohmann::json body;
  bool close = false;  // the server closes the connection after sending it
};

class Store {
 public:
  // Invalid options (MIN > MAX, no token, fewer expected hosts than MIN) are an mtrain::Error.
  Store(StoreOptions options, const Clock& clock);

  Reply handle(const nlohmann::json& request);
  // Apply what time alone changes: dropping silent joiners, the last call, the join timeout,
  // missed heartbeats. The server calls it periodically and before each request.
  void tick();
  // The launcher's own decision to stop the job (its local ranks failed, a signal).
  void abort(const std::string& reason);
  // The launcher knows a node is gone before its heartbeats can say so (the ssh launcher saw its
  // agent's connection end): treated as missed heartbeats now — a restart round without it
  // (or the job's failure when no restart is left), or, before the round formed, the node is
  // no longer waited for. Its host may join again later (a new agent on it) as a new node.
  // Returns false when the store holds no node of that host.
  bool lose_host(const std::string& host, const std::string& reason);
  StoreStatus status() const;
  Phase phase() const { return phase_; }
  int round() const { return round_; }
  // The progress line alone (cached; rebuilt after a change).
  const std::string& progress() const;
  // Changes whenever anything a progress line or status shows may have changed.
  uint64_t version() const { return version_; }

 private:
  struct Participant {
    std::string id, host, addr;
    int slots = 0;
    TimePoint last_seen;
    int node_rank = -1;  // in the last round it ran in (kept for the order of the next one)
    bool left = false;
    int round = 0;       // the round it joined: < round_ must re-join, > round_ waits for the next
  };

  Participant* find(const std::string& id);
  Reply join(const nlohmann::json& req, const std::string& id);
  nlohmann::json state_for(const Participant& p) const;
  void update_last_call(TimePoint now);
  void maybe_agree(TimePoint now);
  void fail(std::string reason, std::vector<std::string> nodes);
  // A failure while running: a new round when restarts are left, else fail(). `lost`: ids of
  // nodes that are gone (removed), `blamed`: the hosts named.
  void fail_or_restart(const std::string& reason, std::vector<std::string> blamed, const std::vector<std::string>& lost);
  // Opens round r+1: `lost` (ids) removed, every other node re-joins; counted against the
  // restart budget unless it is a membership change.
  void open_round(const std::string& reason, const std::vector<std::string>& lost, bool membership_change);
  // With scale_up, a node waiting for the next round opens it now (a membership change).
  void scale_up_for(const std::string& host);
  // Join the next round while this one runs, if the job is elastic and has room.
  Reply wait_for_next_round(Participant& p);
  int members() const { return joined_; }
  // Remove the participants `drop` selects (joining phase), keeping the indexes right.
  template <class Pred>
  void remove_nodes(Pred drop);
  void reindex();
  // Expected hosts that have not joined, in host-list order; at most `limit` of them.
  std::vector<std::string> waiting_for(size_t limit = SIZE_MAX) const;
  std::string build_progress() const;
  std::string node_label(const Participant& p) const;
  void changed() { ++version_; }

  StoreOptions opt_;
  const Clock& clock_;
  TimePoint start_;
  Phase phase_ = Phase::joining;
  std::vector<Participant> nodes_;  // join order
  std::unordered_map<std::string, size_t> index_;            // node id → position in nodes_
  std::unordered_map<std::string, size_t> expected_index_;   // expected host → position in the list
  std::set<size_t> missing_;                                 // positions of expected hosts not joined
  TimePoint last_tick_;
  TimePoint round_start_;
  int round_ = 0, restarts_ = 0;
  int joined_ = 0;  // participants with round == round_
  std::string restart_reason_;
  bool membership_round_ = false;  // round_ was opened by a membership change (scale up)
  std::vector<std::string> lost_;
  uint64_t version_ = 1;
  mutable uint64_t progress_version_ = 0;
  mutable std::string progress_;
  std::optional<TimePoint> last_call_deadline_;
  std::optional<Assignment> assignment_;
  std::string reason_;
  std::vector<std::string> failed_nodes_;
};

}  // namespace mtrain::rendezvous

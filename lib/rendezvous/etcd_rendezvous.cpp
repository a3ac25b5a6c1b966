#include "lib/rendezvous/etcd_rendezvous.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_mac.hpp"
#include "lib/rendezvous/token.hpp"

namespace mtrain::rendezvous {

using nlohmann::json;

namespace {

bool etcd_starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::string etcd_hosts_line(const std::vector<std::string>& hosts) {
  std::string out;
  for (size_t i = 0; i < hosts.size() && i < kListedHosts; ++i) out += (i ? ", " : "") + hosts[i];
  if (hosts.size() > kListedHosts) out += fmt::format(" and {} more", hosts.size() - kListedHosts);
  return out;
}

}  // namespace

EtcdRendezvous::EtcdRendezvous(EtcdRendezvousOptions options, std::shared_ptr<EtcdKv> kv, const Clock& clock)
    : opt_(std::move(options)), kv_(std::move(kv)), clock_(clock) {
  if (opt_.node_id.empty()) opt_.node_id = generate_token().substr(0, 16);
  if (opt_.addr.empty()) opt_.addr = opt_.host;
  if (opt_.token.empty()) throw Error("the etcd rendezvous needs the job token", fmt::format("set {}", kTokenEnv));
  if (opt_.run_id.empty() || opt_.run_id.find('/') != std::string::npos)
    throw Error(fmt::format("the etcd rendezvous needs a run id without '/' (got '{}')", opt_.run_id),
                "give --rdzv-id ID");
  job_ = opt_.prefix + opt_.run_id + "/";
  // Each is a field of the round's agreement (etcd_agreement.hpp): refused here, before the node
  // joins, rather than by whichever agent completes the round.
  for (const auto& [what, field] : {std::pair{"node id", &opt_.node_id}, {"host", &opt_.host}, {"address", &opt_.addr}})
    if (const std::string why = agreement_field_problem(*field); !why.empty())
      throw Error(fmt::format("the etcd rendezvous cannot take the node's {} '{}': {}", what, *field, why),
                  "give the node a host name and address without whitespace");
}

int EtcdRendezvous::round_nodes() const { return agreed_ ? agreed_->nnodes() : 0; }

EtcdRendezvous::~EtcdRendezvous() = default;

std::string EtcdRendezvous::round_prefix(int round) const { return fmt::format("{}r/{}/", job_, round); }

EtcdRendezvous::State EtcdRendezvous::read_state() {
  const std::string key = job_ + "state";
  auto kv = kv_->get(key);
  if (!kv) {
    kv_->create(key, new_state(), 0);
    kv = kv_->get(key);
    if (!kv)
      throw Error(fmt::format("etcd: {} vanished as it was created (the job's keys were removed)", key), {},
                  kExitFailure);
  }
  return state_of(*kv);
}

EtcdRendezvous::State EtcdRendezvous::state_of(const KeyValue& kv) const {
  json j = json::parse(kv.value, nullptr, false);
  if (!j.is_object())
    throw Error(fmt::format("etcd: {} holds no rendezvous state", kv.key),
                "remove the prefix with etcdctl del --prefix", kExitFailure);
  State s;
  s.round = j.value("round", 0);
  s.restarts = j.value("restarts", 0);
  s.reason = j.value("reason", "");
  s.membership_change = j.value("membership_change", false);
  s.failed = j.value("failed", false);
  s.mod_revision = kv.mod_revision;
  return s;
}

void EtcdRendezvous::keep_lease() {
  if (lease_ == 0) {
    lease_ = kv_->grant_lease(opt_.node_timeout);
  } else if (!kv_->keep_alive(lease_)) {
    throw Error(fmt::format("node '{}' kept no lease alive in etcd for {}: the job counted it lost", opt_.host,
                            format_duration(opt_.node_timeout)),
                "", kExitFailure);
  }
  lease_refreshed_ = clock_.now();
}

JobState EtcdRendezvous::job_state(const State& s) const {
  JobState out;
  out.round = s.round;
  out.restart_reason = s.reason;
  out.membership_change = s.membership_change;
  if (s.failed) {
    out.phase = Phase::failed;
    out.reason = s.reason;
  } else {
    out.phase = s.round == round_ ? Phase::running : Phase::joining;
  }
  return out;
}

// The agreement `members` (in node-rank order) make, signed: what "agreed" holds. The ranks are
// laid out here, once, for every agent of the round (etcd_agreement.hpp).
std::string EtcdRendezvous::agreement_value(const std::vector<const KeyValue*>& members, const std::string& rp) const {
  std::vector<std::string> ids;
  std::vector<AssignedNode> nodes;
  for (const KeyValue* kv : members) {
    const json m = json::parse(kv->value, nullptr, false);
    if (!m.is_object())
      throw Error(fmt::format("etcd: {} holds no rendezvous member", kv->key),
                  "remove the prefix with etcdctl del --prefix", kExitFailure);
    AssignedNode n;
    n.host = m.value("host", "");
    n.addr = m.value("addr", n.host);
    n.local_world_size = m.value("slots", 1);
    nodes.push_back(std::move(n));
    ids.push_back(kv->key.substr(rp.size() + 2));
  }
  return sign_agreement(opt_.token, assign_ranks(std::move(nodes), opt_.master_port, opt_.run_id), ids);
}

// Puts this node's member key into the round the state names, in one transaction that also
// checks the guard and reads what the wait needs (the agreement, the member count): a join costs
// the lease, this and the watch. Its compare names the state this node believes (`known`, else a
// new job's): when the state is another (a later round, a failed job) or the guard is missing or
// another job's, nothing is written and the guard and state are read instead.
EtcdRendezvous::Joined EtcdRendezvous::join_round(std::optional<KeyValue> known) {
  const std::string mac = hmac_sha256_hex(opt_.token, job_);
  for (;;) {
    const State s = known ? state_of(*known) : State{};
    if (s.failed)
      throw Error(fmt::format("the job under etcd prefix {} has failed: {}", job_, s.reason), "", kExitFailure);
    const std::string rp = round_prefix(s.round);
    TxnCompare state_is{job_ + "state"};
    if (known) {
      state_is.target = TxnCompare::Target::mod_revision;
      state_is.revision = known->mod_revision;
    } else {
      state_is.value = new_state();
    }
    TxnResult t =
        kv_->txn({TxnCompare{job_ + "guard", TxnCompare::Target::value, mac}, state_is},
                 {TxnOp::write(rp + "n/" + opt_.node_id,
                               json{{"host", opt_.host}, {"addr", opt_.addr}, {"slots", opt_.slots}}.dump(), lease_),
                  TxnOp::read({rp + "agreed"}), TxnOp::read({rp + "n/", true, true}), TxnOp::read({job_ + "state"})},
                 {TxnOp::read({job_ + "guard"}), TxnOp::read({job_ + "state"})});
    if (t.succeeded) return Joined{state_of(t.reads[2].kvs.at(0)), std::move(t.reads[0]), t.reads[1].count};
    const auto& guard = t.reads[0].kvs;
    if (!guard.empty() && !tokens_equal(guard.front().value, mac))
      throw Error(
          fmt::format("etcd prefix {} belongs to another job: its token is not this node's {}", job_, kTokenEnv),
          "give every node of one job the same token; for a second job pick another --rdzv-id", kExitFailure);
    if (guard.empty() || t.reads[1].kvs.empty()) {
      // The first node of the job (or one racing it) lays the guard and the state, in one
      // transaction (a job's nodes start together: hundreds race here); whoever loses the race
      // joins with the winner's.
      if (guard.empty())
        kv_->txn({TxnCompare{job_ + "guard", TxnCompare::Target::create_revision, {}, 0}},
                 {TxnOp::write(job_ + "guard", mac), TxnOp::write(job_ + "state", new_state())}, {});
      else kv_->create(job_ + "state", new_state(), 0);
      known.reset();
      continue;
    }
    known = t.reads[1].kvs.front();
  }
}

std::string EtcdRendezvous::new_state() { return json{{"round", 0}, {"restarts", 0}}.dump(); }

// This node is in the round's agreement, at `place`: the round it runs in, and its ranks.
JoinResult EtcdRendezvous::take_place(Agreement agreed, NodeAssignment place, const State& s) {
  round_ = s.round;
  agreed_ = std::move(agreed);
  JoinResult out;
  out.node_rank = place.self.node_rank;
  out.assignment = std::move(place);
  out.round = s.round;
  out.restarts = s.restarts;
  out.restart_reason = s.reason;
  return out;
}

// Round `r` formed without this node (it came late, or the job is full): wait for the state to
// move (the next round), at most until the lease's next keep-alive or the deadline.
void EtcdRendezvous::wait_for_next_round(int r, int64_t after_revision, TimePoint deadline) {
  if (opt_.on_progress) opt_.on_progress(fmt::format("round {} runs without this node; waiting for the next", r));
  kv_->watch_prefix(
      job_ + "state", after_revision + 1,
      std::max(Duration(1), std::chrono::duration_cast<Duration>(
                                std::min(deadline, lease_refreshed_ + opt_.node_timeout / 3) - clock_.now())));
  if (clock_.now() >= deadline)
    throw Error(fmt::format("no round of the job under etcd prefix {} took node '{}' in within {}", job_, opt_.host,
                            format_duration(opt_.join_timeout)),
                "", kExitFailure);
  keep_lease();
}

// This agent completes round `r`: only it reads the members (the first MAX in join order) and
// creates the agreement. Returns the round's agreement — its own, or another agent's that was
// first — or none when no member is left to agree.
std::optional<KeyValue> EtcdRendezvous::form_round(int r, const std::string& rp) {
  const RangeResult first = kv_->first_created(rp + "n/", opt_.max_nodes);
  std::vector<const KeyValue*> members;
  for (const auto& kv : first.kvs) members.push_back(&kv);
  if (r > 0) order_survivors_first(members, r);
  if (members.empty()) return std::nullopt;
  KeyValue agreed{rp + "agreed", agreement_value(members, rp)};
  if (auto theirs = kv_->create(agreed.key, agreed.value, 0)) {
    agreed = *theirs;  // another agent formed the round first: its agreement holds
  } else if (r > 0) {
    kv_->delete_prefix(round_prefix(r - 1));  // the round before is over for everyone
  }
  return agreed;
}

// The progress line when the count changed, and the error once the deadline has come. The first
// joined hosts are read only then (every agent listing them on every wake was a request per
// wake that a job of N nodes paid N times).
void EtcdRendezvous::report_waiting(int64_t count, int64_t last_count, const std::string& rp, TimePoint now,
                                    TimePoint deadline) {
  const bool progress = count != last_count && opt_.on_progress;
  if (!progress && now < deadline) return;
  std::vector<std::string> hosts;
  for (const auto& kv : kv_->first_created(rp + "n/", static_cast<int64_t>(kListedHosts)).kvs)
    hosts.push_back(json::parse(kv.value).value("host", ""));
  if (progress) {
    const std::string listed =
        etcd_hosts_line(hosts) + (count > static_cast<int64_t>(hosts.size()) && hosts.size() == kListedHosts
                                      ? fmt::format(" and {} more", count - static_cast<int64_t>(hosts.size()))
                                      : "");
    opt_.on_progress(opt_.min_nodes == opt_.max_nodes
                         ? fmt::format("{}/{} nodes joined (etcd {}): {}", count, opt_.max_nodes, job_, listed)
                         : fmt::format("{} nodes joined, {}..{} wanted (etcd {}): {}", count, opt_.min_nodes,
                                       opt_.max_nodes, job_, listed));
  }
  if (now >= deadline)
    throw Error(
        fmt::format("the rendezvous under etcd prefix {} did not form within {}: {} of at least {} nodes joined ({})",
                    job_, format_duration(opt_.join_timeout), count, opt_.min_nodes,
                    hosts.empty() ? "none" : etcd_hosts_line(hosts)),
        "start the missing nodes with the same --rdzv-endpoint and --rdzv-id, or lower --nnodes", kExitFailure);
}

JoinResult EtcdRendezvous::join() {
  keep_lease();
  const TimePoint deadline = clock_.now() + opt_.join_timeout;
  std::optional<KeyValue> known;  // the state this node last read; none: a new job's, presumed
  for (;;) {
    Joined joined = join_round(known);
    const State& s = joined.state;
    const int r = s.round;
    const std::string rp = round_prefix(r);
    std::optional<TimePoint> last_call_at;
    int64_t last_count = -1;
    RangeResult ctl = std::move(joined.agreed);
    int64_t count = joined.count;
    State now_state = s;
    bool fresh = true;  // ctl and count are as the join (or the watch's event) left them: no read
    for (;;) {
      if (!fresh) {
        // What each wake reads is O(1) in the job's size (the agreement key, the state, a count):
        // N waiting agents that re-read every member on every join made forming O(N^2) in etcd.
        auto reads = kv_->read_all({{rp + "agreed"}, {job_ + "state"}, {rp + "n/", true, true}});
        if (reads[1].kvs.empty()) {
          known.reset();
        } else {
          known = reads[1].kvs.front();
          now_state = state_of(*known);
        }
        if (!known || now_state.failed || now_state.round != r) break;
        ctl = std::move(reads[0]);
        count = reads[2].count;
      }
      fresh = false;
      if (!ctl.kvs.empty()) {
        Agreement agreed = Agreement::verify(ctl.kvs.front().value, opt_.token, rp + "agreed");
        if (auto place = agreed.place_of(opt_.node_id, opt_.run_id))
          return take_place(std::move(agreed), std::move(*place), s);
        // Out of the round's members (whose count tells the running nodes nobody is lost).
        kv_->erase(rp + "n/" + opt_.node_id);
        if (!scale_up_for(now_state, static_cast<size_t>(agreed.nnodes())))  // else the next round is open: join it
          wait_for_next_round(r, ctl.revision, deadline);
        continue;
      }
      const TimePoint now = clock_.now();
      if (count >= opt_.min_nodes && !last_call_at) last_call_at = now + opt_.last_call;
      if (count >= opt_.max_nodes || (last_call_at && now >= *last_call_at)) {
        if (auto agreed = form_round(r, rp)) {
          // The agreement is known (written or read back by the create): no read for it.
          ctl.kvs = {*agreed};
          fresh = true;
          continue;
        }
      }
      report_waiting(count, last_count, rp, now, deadline);
      last_count = count;
      // Woken by the agreement (whoever completes the round writes it), else by the last call,
      // the lease's next keep-alive or the deadline. The event carries the agreement: no read.
      TimePoint until = std::min(deadline, lease_refreshed_ + opt_.node_timeout / 3);
      if (last_call_at) until = std::min(until, *last_call_at);
      if (until > now) {
        const WatchResult w = kv_->watch_prefix(rp + "agreed", ctl.revision + 1,
                                                std::chrono::duration_cast<Duration>(until - now) + Duration(1));
        for (const auto& kv : w.puts)
          if (kv.key == rp + "agreed") {
            ctl.kvs = {kv};
            ctl.revision = kv.mod_revision;
            fresh = true;
          }
      }
      if (clock_.now() >= lease_refreshed_ + opt_.node_timeout / 3) keep_lease();
    }
  }
}

EtcdRendezvous::State EtcdRendezvous::fail_or_restart(const std::string& reason) {
  for (;;) {
    State s = read_state();
    if (s.failed || s.round != round_) return s;
    bool someone_done = !kv_->range_prefix(round_prefix(round_) + "done/").kvs.empty();
    json next = {{"round", s.round}, {"restarts", s.restarts}, {"reason", reason}};
    const bool restart = s.restarts < opt_.max_restarts && !someone_done;
    if (restart) {
      next["round"] = s.round + 1;
      next["restarts"] = s.restarts + 1;
    } else {
      next["failed"] = true;
      if (someone_done) next["reason"] = reason + " (after another node finished: its work cannot be redone)";
    }
    if (kv_->compare_and_put(job_ + "state", s.mod_revision, next.dump())) {
      if (!restart) {
        // A failed job's keys go: the state and guard only after every agent had time to read why.
        const int64_t linger = kv_->grant_lease(2 * opt_.node_timeout);
        kv_->put(job_ + "state", next.dump(), linger);
        kv_->put(job_ + "guard", hmac_sha256_hex(opt_.token, job_), linger);
        kv_->delete_prefix(job_ + "r/");
      }
      return read_state();
    }
  }
}

void EtcdRendezvous::order_survivors_first(std::vector<const KeyValue*>& members, int r) const {
  const std::string before = round_prefix(r - 1), rp = round_prefix(r);
  auto prev = kv_->get(before + "agreed");
  if (!prev) return;
  const Agreement agreed = Agreement::verify(prev->value, opt_.token, before + "agreed");
  const std::vector<AgreementRow> rows = agreed.rows();
  auto rank_before = [&](const KeyValue* kv) {
    const std::string_view id = std::string_view(kv->key).substr(rp.size() + 2);
    return std::find_if(rows.begin(), rows.end(), [&](const AgreementRow& row) { return row.id == id; }) - rows.begin();
  };
  std::stable_sort(members.begin(), members.end(),
                   [&](const KeyValue* a, const KeyValue* b) { return rank_before(a) < rank_before(b); });
}

bool EtcdRendezvous::scale_up_for(const State& s, size_t running) {
  if (!opt_.scale_up || s.failed || running >= static_cast<size_t>(opt_.max_nodes)) return false;
  // A node that finished cannot redo its work: the newcomer waits, as without scale up.
  if (kv_->read_all({{round_prefix(s.round) + "done/", true, true}})[0].count > 0) return false;
  const json next = {
      {"round", s.round + 1},
      {"restarts", s.restarts},
      {"reason", fmt::format("node '{}' is waiting to join: the job scales up from {} nodes", opt_.host, running)},
      {"membership_change", true}};
  // Lost to another writer (another newcomer, a failure): the state moved all the same.
  kv_->compare_and_put(job_ + "state", s.mod_revision, next.dump());
  return true;
}

JobState EtcdRendezvous::heartbeat() {
  keep_lease();
  const std::string rp = round_prefix(round_);
  // The state and two counts in one read-only transaction: every node of the round still holds
  // its member key or has finished, so nobody is lost. Not the member list: a heartbeat costs
  // the same at any job size. First serializable (the member's own copy, no round to the
  // leader): a stale state is seen changed at the next beat, and a stale count at worst shows a
  // lost node one beat longer, or looks short. Short is common at scale: under load a follower
  // applies seconds behind the leader (in a 2048-node bench etcd served ~5000 ranges where the
  // protocol reads a handful: heartbeats listing every member key after a short count), so the
  // counts are read again linearizably before the list. Nothing is decided on a stale read.
  const auto counts = [&](bool serializable) {
    return kv_->read_all({{job_ + "state", false, false, serializable},
                          {rp + "n/", true, true, serializable},
                          {rp + "done/", true, true, serializable}});
  };
  // The job's state when these reads settle the beat (the round moved, or nobody is missing).
  const auto settled = [&](const std::vector<RangeResult>& reads) -> std::optional<State> {
    State st = reads[0].kvs.empty() ? read_state() : state_of(reads[0].kvs.front());
    if (st.failed || st.round != round_ || reads[1].count + reads[2].count == round_nodes()) return st;
    return std::nullopt;
  };
  if (auto st = settled(counts(true))) return job_state(*st);
  const auto reads = counts(false);
  if (auto st = settled(reads)) return job_state(*st);
  const State s = reads[0].kvs.empty() ? read_state() : state_of(reads[0].kvs.front());
  std::set<std::string, std::less<>> present;
  for (const auto& kv : kv_->range_prefix(rp).kvs) {
    const std::string rest = kv.key.substr(rp.size());
    if (etcd_starts_with(rest, "n/")) present.insert(rest.substr(2));
    if (etcd_starts_with(rest, "done/")) present.insert(rest.substr(5));
  }
  std::vector<std::string> lost;
  for (const AgreementRow& row : agreed_ ? agreed_->rows() : std::vector<AgreementRow>{})
    if (present.find(row.id) == present.end()) lost.emplace_back(row.host);
  if (lost.empty()) return job_state(s);
  return job_state(
      fail_or_restart(fmt::format("node{} {} lost: no lease keep-alive in etcd for {}", lost.size() > 1 ? "s" : "",
                                  etcd_hosts_line(lost), format_duration(opt_.node_timeout))));
}

JobState EtcdRendezvous::report_failure(const std::string& reason) {
  return job_state(fail_or_restart(fmt::format("node '{}' reported a failure: {}", opt_.host, reason)));
}

JobState EtcdRendezvous::leave() {
  const std::string rp = round_prefix(round_);
  kv_->put(rp + "done/" + opt_.node_id, opt_.host, 0);
  if (static_cast<int>(kv_->range_prefix(rp + "done/").kvs.size()) >= round_nodes()) kv_->delete_prefix(job_);
  if (lease_ != 0) kv_->revoke(lease_);
  lease_ = 0;
  JobState out;
  out.phase = Phase::finished;
  out.round = round_;
  return out;
}

}  // namespace mtrain::rendezvous

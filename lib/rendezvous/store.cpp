#include "lib/rendezvous/store.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/rendezvous/token.hpp"

namespace mtrain::rendezvous {

namespace {

using nlohmann::json;

constexpr size_t kMaxIdBytes = 128;
constexpr size_t kMaxHostBytes = 255;
constexpr size_t kMaxReasonBytes = 2000;
constexpr int kMaxSlots = 4096;

Reply refuse(const std::string& why) { return {{{"ok", false}, {"error", why}}, true}; }
Reply decline(const std::string& why) { return {{{"ok", false}, {"error", why}}, false}; }

// A string field, or nullopt when missing, not a string, empty, too long, or not printable.
std::optional<std::string> text_field(const json& req, const char* key, size_t max_bytes) {
  auto it = req.find(key);
  if (it == req.end() || !it->is_string()) return std::nullopt;
  const auto& s = it->get_ref<const std::string&>();
  if (s.empty() || s.size() > max_bytes) return std::nullopt;
  for (char c : s)
    if (static_cast<unsigned char>(c) < ' ' || c == 0x7f) return std::nullopt;
  return s;
}

// "a, b, c" naming at most kListedHosts of `total`, then "and N more".
std::string listed(const std::vector<std::string>& names, size_t total) {
  std::vector<std::string> shown(names.begin(), names.begin() + static_cast<long>(std::min(names.size(), kListedHosts)));
  std::string out = str::join(shown, ", ");
  if (total > shown.size()) out += fmt::format(" and {} more", total - shown.size());
  return out;
}

bool host_name_ok(const std::string& h) {
  return std::all_of(h.begin(), h.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' || c == ':' || c == '%';
  });
}

}  // namespace

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::joining: return "joining";
    case Phase::running: return "running";
    case Phase::finished: return "finished";
    case Phase::failed: return "failed";
  }
  return "?";
}

Store::Store(StoreOptions options, const Clock& clock) : opt_(std::move(options)), clock_(clock) {
  if (opt_.min_nodes < 1 || opt_.max_nodes < opt_.min_nodes)
    throw Error(fmt::format("node count {}:{} is not MIN:MAX with 1 <= MIN <= MAX", opt_.min_nodes, opt_.max_nodes));
  if (opt_.token.empty()) throw Error("the rendezvous store needs a job token", "Set MTRAIN_RDZV_TOKEN or let mtrain generate one.");
  if (!opt_.expected_hosts.empty() && static_cast<int>(opt_.expected_hosts.size()) < opt_.min_nodes)
    throw Error(fmt::format("--nnodes asks for at least {} nodes but only {} hosts are listed", opt_.min_nodes,
                            opt_.expected_hosts.size()),
                "List more hosts or lower MIN.");
  if (opt_.max_restarts < 0) throw Error(fmt::format("--max-restarts {} must be 0 or more", opt_.max_restarts));
  for (size_t i = 0; i < opt_.expected_hosts.size(); ++i) {
    expected_index_.emplace(opt_.expected_hosts[i], i);
    missing_.insert(i);
  }
  start_ = last_tick_ = round_start_ = clock_.now();
}

Store::Participant* Store::find(const std::string& id) {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

// The indexes, the count of this round's members and the expected hosts not (re-)joined.
void Store::reindex() {
  index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) index_.emplace(nodes_[i].id, i);
  missing_.clear();
  for (size_t i = 0; i < opt_.expected_hosts.size(); ++i) missing_.insert(i);
  joined_ = 0;
  for (const auto& p : nodes_) {
    if (p.round != round_) continue;
    ++joined_;
    auto e = expected_index_.find(p.host);
    if (e != expected_index_.end()) missing_.erase(e->second);
  }
}

template <class Pred>
void Store::remove_nodes(Pred drop) {
  auto end = std::remove_if(nodes_.begin(), nodes_.end(), drop);
  if (end == nodes_.end()) return;
  nodes_.erase(end, nodes_.end());
  reindex();
  changed();
}

std::string Store::node_label(const Participant& p) const {
  if (p.node_rank >= 0) return fmt::format("node '{}' (node rank {})", p.host, p.node_rank);
  return fmt::format("node '{}'", p.host);
}

std::vector<std::string> Store::waiting_for(size_t limit) const {
  std::vector<std::string> out;
  for (size_t i : missing_) {
    if (out.size() >= limit) break;
    out.push_back(opt_.expected_hosts[i]);
  }
  return out;
}

const std::string& Store::progress() const {
  if (progress_version_ != version_) {
    progress_ = build_progress();
    progress_version_ = version_;
  }
  return progress_;
}

std::string Store::build_progress() const {
  std::vector<std::string> hosts, pending;
  size_t n_pending = 0;
  for (const auto& p : nodes_) {
    if (p.round == round_) {
      if (hosts.size() < kListedHosts) hosts.push_back(p.host);
    } else if (p.round < round_) {
      if (pending.size() < kListedHosts) pending.push_back(p.host);
      ++n_pending;
    }
  }
  const size_t n = static_cast<size_t>(joined_);
  switch (phase_) {
    case Phase::joining: {
      std::string line;
      if (round_ > 0 && membership_round_) line = fmt::format("round {} ({}): ", round_, restart_reason_);
      else if (round_ > 0) line = fmt::format("restart {} of {} ({}): ", restarts_, opt_.max_restarts, restart_reason_);
      if (!opt_.expected_hosts.empty()) {
        line += fmt::format("{}/{} nodes joined", n, opt_.expected_hosts.size());
        if (!missing_.empty()) line += "; waiting for: " + listed(waiting_for(kListedHosts), missing_.size());
      } else {
        if (opt_.min_nodes == opt_.max_nodes) {
          line += fmt::format("{}/{} nodes joined", n, opt_.max_nodes);
          if (n) line += " (" + listed(hosts, n) + ")";
        } else {
          line += fmt::format("{} nodes joined (need {} to {})", n, opt_.min_nodes, opt_.max_nodes);
          if (n) line += ": " + listed(hosts, n);
        }
        if (n_pending) line += "; waiting for: " + listed(pending, n_pending);
      }
      if (last_call_deadline_)
        line += fmt::format("; last call: starting with {} nodes unless more join within {}", n,
                            format_duration(opt_.last_call));
      return line;
    }
    case Phase::running: {
      std::string line = fmt::format("job formed: {} nodes, {} ranks, master {}:{}", assignment_->nodes.size(),
                                     assignment_->world_size, assignment_->master_addr, assignment_->master_port);
      if (round_ > 0) line += fmt::format(" (restart {} of {})", restarts_, opt_.max_restarts);
      size_t waiting = nodes_.size() - n;
      if (waiting) line += fmt::format("; {} node{} waiting for the next round", waiting, waiting == 1 ? "" : "s");
      return line;
    }
    case Phase::finished: return "all nodes finished";
    case Phase::failed: return reason_;
  }
  return {};
}

StoreStatus Store::status() const {
  StoreStatus s;
  s.phase = phase_;
  for (const auto& p : nodes_)
    if (p.round == round_) s.joined.push_back(p.host);
  s.waiting_for = waiting_for();
  s.progress = progress();
  s.reason = reason_;
  s.failed_nodes = failed_nodes_;
  s.assignment = assignment_;
  s.round = round_;
  s.restarts = restarts_;
  s.restart_reason = restart_reason_;
  s.membership_change = membership_round_;
  s.lost = lost_;
  return s;
}

void Store::fail(std::string reason, std::vector<std::string> nodes) {
  if (phase_ == Phase::failed || phase_ == Phase::finished) return;
  phase_ = Phase::failed;
  reason_ = std::move(reason);
  failed_nodes_ = std::move(nodes);
  changed();
}

void Store::abort(const std::string& reason) { fail(reason, {}); }

bool Store::lose_host(const std::string& host, const std::string& reason) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const Participant& p) { return p.host == host; });
  if (it == nodes_.end() || phase_ == Phase::failed || phase_ == Phase::finished) return false;
  const Participant& p = *it;
  if (phase_ == Phase::running && p.round == round_ && !p.left) {
    fail_or_restart(fmt::format("{} was lost: {}", node_label(p), reason), {p.host}, {p.id});
    return true;
  }
  // Waiting for the next round, or (while a round forms) not back yet or back already: it is
  // not waited for any more; a survivor of the last round counts among the nodes lost.
  if (round_ > 0 && p.round < round_) lost_.push_back(p.host);
  const std::string id = p.id;
  remove_nodes([&](const Participant& q) { return q.id == id; });
  if (phase_ == Phase::joining) {
    TimePoint now = clock_.now();
    update_last_call(now);
    maybe_agree(now);
  }
  return true;
}

void Store::fail_or_restart(const std::string& reason, std::vector<std::string> blamed,
                            const std::vector<std::string>& lost) {
  if (phase_ != Phase::running) return;
  bool someone_finished = std::any_of(nodes_.begin(), nodes_.end(), [&](const Participant& p) {
    return p.round == round_ && p.left;
  });
  if (restarts_ >= opt_.max_restarts || someone_finished) {
    std::string why = reason;
    if (opt_.max_restarts > 0 && !someone_finished)
      why += fmt::format(" (no restarts left: all {} used)", opt_.max_restarts);
    else if (someone_finished)
      why += " (not restarting: some nodes already finished)";
    for (const auto& id : lost)
      if (const Participant* p = find(id)) lost_.push_back(p->host);
    fail(std::move(why), std::move(blamed));
    return;
  }
  for (const auto& id : lost)
    if (const Participant* p = find(id)) lost_.push_back(p->host);
  open_round(reason, lost, false);
}

void Store::open_round(const std::string& reason, const std::vector<std::string>& lost, bool membership_change) {
  TimePoint now = clock_.now();
  if (!membership_change) ++restarts_;
  ++round_;
  restart_reason_ = reason;
  membership_round_ = membership_change;
  remove_nodes([&](const Participant& p) { return std::find(lost.begin(), lost.end(), p.id) != lost.end(); });
  for (auto& p : nodes_) {
    p.left = false;
    // A node that was heart-beating gets a full heartbeat period to stop its ranks and come
    // back (its agent does not beat while tearing down). One already silent for half of it
    // (agents beat every timeout/5 at most) is most likely dead — a whole node killed makes its
    // peers' ranks fail and report before its timeout: its silence keeps counting, so the round
    // forms once it exceeds the timeout instead of a full timeout (or last call) later.
    if (now - p.last_seen <= opt_.heartbeat_timeout / 2) p.last_seen = std::max(p.last_seen, now);
  }
  phase_ = Phase::joining;
  assignment_.reset();
  last_call_deadline_.reset();
  round_start_ = now;
  reindex();  // the nodes that were waiting for this round are its first members
  changed();
  update_last_call(now);
  maybe_agree(now);
}

void Store::scale_up_for(const std::string& host) {
  if (!opt_.scale_up || phase_ != Phase::running) return;
  // A node that finished cannot redo its work: the newcomer waits as without scale up.
  if (std::any_of(nodes_.begin(), nodes_.end(), [&](const Participant& q) { return q.round == round_ && q.left; }))
    return;
  open_round(fmt::format("node '{}' is waiting to join: the job scales up from {} nodes", host, joined_), {}, true);
}

void Store::update_last_call(TimePoint now) {
  if (joined_ < opt_.min_nodes) {
    if (last_call_deadline_) changed();
    last_call_deadline_.reset();
  } else if (!last_call_deadline_) {
    last_call_deadline_ = now + opt_.last_call;
    changed();
  }
}

void Store::maybe_agree(TimePoint now) {
  if (phase_ != Phase::joining) return;
  const int n = joined_;
  const bool everyone_back = static_cast<int>(nodes_.size()) == n;  // no survivor of the last round still out
  bool all_expected = !opt_.expected_hosts.empty() && missing_.empty();
  bool last_call_over = last_call_deadline_ && now >= *last_call_deadline_;
  if (!(n >= opt_.max_nodes || (all_expected && n >= opt_.min_nodes) || (round_ > 0 && everyone_back && n >= opt_.min_nodes) ||
        last_call_over))
    return;

  // Expected-host order; else survivors in their last node-rank order, then newcomers in join order.
  std::vector<Participant*> order;
  if (!opt_.expected_hosts.empty()) {
    for (const auto& h : opt_.expected_hosts)
      for (auto& p : nodes_)
        if (p.host == h && p.round == round_) order.push_back(&p);
  } else {
    for (auto& p : nodes_)
      if (p.round == round_) order.push_back(&p);
    std::stable_sort(order.begin(), order.end(), [](const Participant* a, const Participant* b) {
      int ra = a->node_rank < 0 ? INT32_MAX : a->node_rank, rb = b->node_rank < 0 ? INT32_MAX : b->node_rank;
      return ra < rb;
    });
  }
  for (auto& p : nodes_) p.node_rank = -1;  // not in this round: no node rank
  std::vector<AssignedNode> assigned;
  for (size_t i = 0; i < order.size(); ++i) {
    order[i]->node_rank = static_cast<int>(i);
    order[i]->last_seen = now;  // everyone gets a full heartbeat period from the start
    assigned.push_back({order[i]->host, order[i]->addr, 0, 0, order[i]->slots});
  }
  assignment_ = assign_ranks(std::move(assigned), opt_.master_port, opt_.run_id);
  phase_ = Phase::running;
  changed();
}

void Store::tick() {
  TimePoint now = clock_.now();
  last_tick_ = now;
  if (phase_ == Phase::joining) {
    // A node that went silent before the job formed is not waited for (it may come back and
    // rejoin). In a restart round, a survivor of the last round that went silent is lost.
    for (const auto& p : nodes_)
      if (round_ > 0 && p.round < round_ && now - p.last_seen > opt_.heartbeat_timeout) lost_.push_back(p.host);
    remove_nodes([&](const Participant& p) { return now - p.last_seen > opt_.heartbeat_timeout; });
    update_last_call(now);
    maybe_agree(now);
    if (phase_ == Phase::joining && now - round_start_ >= opt_.join_timeout) {
      auto missing = waiting_for();
      std::string reason;
      if (round_ > 0)
        reason = fmt::format("the job could not re-form after restart {} of {} ({}): {} of the at least {} nodes "
                             "joined within {}{}",
                             restarts_, opt_.max_restarts, restart_reason_, joined_, opt_.min_nodes,
                             format_duration(opt_.join_timeout),
                             lost_.empty() ? std::string() : "; nodes lost: " + listed(lost_, lost_.size()));
      else if (!missing.empty())
        reason = fmt::format("rendezvous timed out after {}: {}/{} nodes joined; never joined: {}",
                             format_duration(opt_.join_timeout), joined_, opt_.expected_hosts.size(),
                             listed(missing, missing.size()));
      else
        reason = fmt::format("rendezvous timed out after {}: {} of the at least {} nodes joined",
                             format_duration(opt_.join_timeout), joined_, opt_.min_nodes);
      fail(std::move(reason), round_ > 0 ? lost_ : missing);
    }
  } else if (phase_ == Phase::running) {
    std::vector<std::string> silent, labels, ids;
    for (const auto& p : nodes_)
      if (p.round == round_ && !p.left && now - p.last_seen > opt_.heartbeat_timeout) {
        silent.push_back(p.host);
        labels.push_back(node_label(p));
        ids.push_back(p.id);
      }
    // Nodes waiting for the next round that went silent are forgotten: they were not running.
    remove_nodes([&](const Participant& p) { return p.round > round_ && now - p.last_seen > opt_.heartbeat_timeout; });
    if (!silent.empty())
      fail_or_restart(fmt::format("{} stopped sending heartbeats (none for more than {})", listed(labels, labels.size()),
                                  format_duration(opt_.heartbeat_timeout)),
                      silent, ids);
  }
}

json Store::state_for(const Participant& p) const {
  // A node waiting for the next round, or a survivor that has not re-joined, is "joining" from
  // its point of view; "round" tells an agent whose ranks run in an older round to restart.
  const bool member = p.round == round_;
  const char* phase = phase_name(phase_);
  if (phase_ == Phase::running && !member) phase = "joining";
  json r{{"ok", true},
         {"phase", phase},
         {"round", std::max(round_, p.round)},
         {"restarts", restarts_},
         {"joined", joined_},
         {"min", opt_.min_nodes},
         {"max", opt_.max_nodes},
         {"waiting_for", waiting_for(kListedHosts)},
         {"waiting", missing_.size()},
         {"progress", member || phase_ != Phase::running
                          ? progress()
                          : fmt::format("waiting for the next round: the job is running with {} nodes", joined_)}};
  if (assignment_ && member && p.node_rank >= 0) {
    r["node_rank"] = p.node_rank;
    r["assignment"] = to_json(for_node(*assignment_, p.node_rank));
  }
  if (round_ > 0) r["restart_reason"] = restart_reason_;
  if (membership_round_) r["membership_change"] = true;
  if (!lost_.empty())  // the most recent ones: a restarted program names the nodes it lost
    r["lost"] = std::vector<std::string>(lost_.end() - static_cast<long>(std::min(lost_.size(), kListedHosts)), lost_.end());
  if (phase_ == Phase::failed) {
    r["reason"] = reason_;
    r["failed_nodes"] = std::vector<std::string>(
        failed_nodes_.begin(), failed_nodes_.begin() + static_cast<long>(std::min(failed_nodes_.size(), kListedHosts)));
  }
  return r;
}

Reply Store::wait_for_next_round(Participant& p) {
  int waiting = 0;
  for (const auto& q : nodes_)
    if (q.round > round_) ++waiting;
  if (p.round <= round_ && joined_ + waiting >= opt_.max_nodes)
    return decline(fmt::format("the job is running with {} nodes and {} waiting, the most it takes ({}); node '{}' "
                               "cannot join",
                               joined_, waiting, opt_.max_nodes, p.host));
  if (p.round != round_ + 1) {
    p.round = round_ + 1;
    p.node_rank = -1;
    changed();
  }
  scale_up_for(p.host);
  return {state_for(p), false};
}

Reply Store::join(const json& req, const std::string& id) {
  auto host = text_field(req, "host", kMaxHostBytes);
  if (!host || !host_name_ok(*host)) return refuse("malformed join: 'host' must be a host name");
  auto slots_it = req.find("slots");
  if (slots_it == req.end() || !slots_it->is_number_integer() || *slots_it < 1 || *slots_it > kMaxSlots)
    return refuse(fmt::format("malformed join: 'slots' must be a whole number from 1 to {}", kMaxSlots));
  std::string addr = *host;
  if (req.contains("addr")) {
    auto a = text_field(req, "addr", kMaxHostBytes);
    if (!a || !host_name_ok(*a)) return refuse("malformed join: 'addr' must be a host name or address");
    addr = *a;
  }
  TimePoint now = clock_.now();
  if (Participant* p = find(id)) {
    p->last_seen = now;
    if (p->round >= round_ || phase_ == Phase::failed || phase_ == Phase::finished)
      return {state_for(*p), false};  // a retry after a lost reply, or a node waiting for the next round
    if (phase_ == Phase::running) return wait_for_next_round(*p);  // the round formed without it
    // A survivor of the last round re-joins the new one.
    p->round = round_;
    p->slots = static_cast<int>(*slots_it);
    p->addr = addr;
    ++joined_;
    auto e = expected_index_.find(p->host);
    if (e != expected_index_.end()) missing_.erase(e->second);
    changed();
    update_last_call(now);
    maybe_agree(now);
    return {state_for(*p), false};
  }
  if (phase_ == Phase::failed) return decline("the job has already failed: " + reason_);
  if (phase_ == Phase::finished) return decline("the job has already finished");
  const bool elastic = opt_.max_restarts > 0;
  if (phase_ != Phase::joining && !elastic)
    return decline(fmt::format("the job already formed with {} nodes; node '{}' is not part of it",
                               assignment_ ? assignment_->nodes.size() : 0, *host));
  if (!opt_.expected_hosts.empty()) {
    auto e = expected_index_.find(*host);
    if (e == expected_index_.end())
      return decline(fmt::format("host '{}' is not in this job's host list ({})", *host,
                                 listed(opt_.expected_hosts, opt_.expected_hosts.size())));
    if (std::any_of(nodes_.begin(), nodes_.end(), [&](const Participant& q) { return q.host == *host; }))
      return decline(fmt::format("host '{}' has already joined this job", *host));
  }
  if (static_cast<int>(nodes_.size()) >= opt_.max_nodes)
    return decline(fmt::format("the job is full ({} nodes)", opt_.max_nodes));
  index_.emplace(id, nodes_.size());
  nodes_.push_back({id, *host, addr, static_cast<int>(*slots_it), now, -1, false, round_});
  Participant& p = nodes_.back();
  if (phase_ == Phase::running) {
    p.round = round_ + 1;  // waits for the next round; not a failure, no restart
    changed();
    scale_up_for(p.host);
    return {state_for(p), false};
  }
  ++joined_;
  if (auto e = expected_index_.find(*host); e != expected_index_.end()) missing_.erase(e->second);
  changed();
  update_last_call(now);
  maybe_agree(now);
  return {state_for(nodes_.back()), false};
}

Reply Store::handle(const json& req) {
  auto tok = req.find("token");
  if (tok == req.end() || !tok->is_string() || !tokens_equal(tok->get_ref<const std::string&>(), opt_.token))
    return refuse("refused: the message does not carry this job's token (MTRAIN_RDZV_TOKEN)");
  auto op = text_field(req, "op", 32);
  if (!op) return refuse("malformed request: no 'op'");
  auto id = text_field(req, "node", kMaxIdBytes);
  if (!id) return refuse("malformed request: no 'node' id");
  // The sender is alive now: note that before time-driven transitions could count it as gone.
  if (Participant* known = find(*id)) known->last_seen = clock_.now();
  if (clock_.now() - last_tick_ >= kTickGranularity) tick();
  if (*op == "join") return join(req, *id);
  if (*op != "heartbeat" && *op != "fail" && *op != "leave") return refuse(fmt::format("unknown op '{}'", *op));

  Participant* p = find(*id);
  if (!p) {
    if (phase_ == Phase::failed) return decline("the job has failed: " + reason_);
    return decline(fmt::format("node id '{}' has not joined (or was dropped after going silent); join first", *id));
  }
  p->last_seen = clock_.now();
  const bool member = p->round == round_;
  if (*op == "fail") {
    std::string why = text_field(req, "reason", kMaxReasonBytes).value_or("no reason given");
    std::string reason = fmt::format("{} reported a failure: {}", node_label(*p), why);
    if (p->round < round_) {
      // About a round already being restarted (its ranks failed because others stopped): no news.
    } else if (!member) {
      // A node waiting for the next round gives up: forget it.
      const std::string gone = *id;
      remove_nodes([&](const Participant& q) { return q.id == gone; });
      return {{{"ok", true}, {"phase", "joining"}, {"round", round_}, {"restarts", restarts_}, {"progress", progress()}},
              false};
    } else if (phase_ == Phase::running) {
      fail_or_restart(reason, {p->host}, {});
    } else {
      fail(reason, {p->host});
    }
    p = find(*id);
  } else if (*op == "leave") {
    if (phase_ == Phase::joining || !member) {
      json r = state_for(*p);
      const std::string gone = *id;
      remove_nodes([&](const Participant& q) { return q.id == gone; });
      update_last_call(clock_.now());
      maybe_agree(clock_.now());
      r["progress"] = progress();
      return {r, false};
    }
    p->left = true;
    if (phase_ == Phase::running && std::all_of(nodes_.begin(), nodes_.end(), [&](const Participant& q) {
          return q.left || q.round != round_;
        })) {
      phase_ = Phase::finished;
      changed();
    }
  }
  if (*op == "heartbeat" && member && phase_ == Phase::running && req.value("brief", false)) {
    // A running node's keep-alive: all it needs is whether its round still runs.
    return {{{"ok", true}, {"phase", "running"}, {"round", round_}, {"restarts", restarts_}}, false};
  }
  return {state_for(*p), false};
}

}  // namespace mtrain::rendezvous

#include "mtrain/rendezvous/store.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/rendezvous/token.hpp"

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
  for (size_t i = 0; i < opt_.expected_hosts.size(); ++i) {
    expected_index_.emplace(opt_.expected_hosts[i], i);
    missing_.insert(i);
  }
  start_ = last_tick_ = clock_.now();
}

Store::Participant* Store::find(const std::string& id) {
  auto it = index_.find(id);
  return it == index_.end() ? nullptr : &nodes_[it->second];
}

void Store::reindex() {
  index_.clear();
  for (size_t i = 0; i < nodes_.size(); ++i) index_.emplace(nodes_[i].id, i);
  missing_.clear();
  for (size_t i = 0; i < opt_.expected_hosts.size(); ++i) missing_.insert(i);
  for (const auto& p : nodes_) {
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
  std::vector<std::string> hosts;
  for (size_t i = 0; i < nodes_.size() && i < kListedHosts; ++i) hosts.push_back(nodes_[i].host);
  switch (phase_) {
    case Phase::joining: {
      int n = static_cast<int>(nodes_.size());
      std::string line;
      if (!opt_.expected_hosts.empty()) {
        line = fmt::format("{}/{} nodes joined", n, opt_.expected_hosts.size());
        if (!missing_.empty()) line += "; waiting for: " + listed(waiting_for(kListedHosts), missing_.size());
      } else if (opt_.min_nodes == opt_.max_nodes) {
        line = fmt::format("{}/{} nodes joined", n, opt_.max_nodes);
        if (n) line += " (" + listed(hosts, nodes_.size()) + ")";
      } else {
        line = fmt::format("{} nodes joined (need {} to {})", n, opt_.min_nodes, opt_.max_nodes);
        if (n) line += ": " + listed(hosts, nodes_.size());
      }
      if (last_call_deadline_)
        line += fmt::format("; last call: starting with {} nodes unless more join within {}", n,
                            format_duration(opt_.last_call));
      return line;
    }
    case Phase::running:
      return fmt::format("job formed: {} nodes, {} ranks, master {}:{}", assignment_->nodes.size(),
                         assignment_->world_size, assignment_->master_addr, assignment_->master_port);
    case Phase::finished: return "all nodes finished";
    case Phase::failed: return reason_;
  }
  return {};
}

StoreStatus Store::status() const {
  StoreStatus s;
  s.phase = phase_;
  for (const auto& p : nodes_) s.joined.push_back(p.host);
  s.waiting_for = waiting_for();
  s.progress = progress();
  s.reason = reason_;
  s.failed_nodes = failed_nodes_;
  s.assignment = assignment_;
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

void Store::update_last_call(TimePoint now) {
  if (static_cast<int>(nodes_.size()) < opt_.min_nodes) {
    if (last_call_deadline_) changed();
    last_call_deadline_.reset();
  } else if (!last_call_deadline_) {
    last_call_deadline_ = now + opt_.last_call;
    changed();
  }
}

void Store::maybe_agree(TimePoint now) {
  if (phase_ != Phase::joining) return;
  int n = static_cast<int>(nodes_.size());
  bool all_expected = !opt_.expected_hosts.empty() && missing_.empty();
  bool last_call_over = last_call_deadline_ && now >= *last_call_deadline_;
  if (!(n >= opt_.max_nodes || (all_expected && n >= opt_.min_nodes) || last_call_over)) return;

  std::vector<Participant*> order;
  if (!opt_.expected_hosts.empty()) {
    for (const auto& h : opt_.expected_hosts)
      for (auto& p : nodes_)
        if (p.host == h) order.push_back(&p);
  } else {
    for (auto& p : nodes_) order.push_back(&p);
  }
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
    // A node that went silent before the job formed is not waited for (it may come back and rejoin).
    remove_nodes([&](const Participant& p) { return now - p.last_seen > opt_.heartbeat_timeout; });
    update_last_call(now);
    maybe_agree(now);
    if (phase_ == Phase::joining && now - start_ >= opt_.join_timeout) {
      auto missing = waiting_for();
      std::string reason;
      if (!missing.empty())
        reason = fmt::format("rendezvous timed out after {}: {}/{} nodes joined; never joined: {}",
                             format_duration(opt_.join_timeout), nodes_.size(), opt_.expected_hosts.size(),
                             listed(missing, missing.size()));
      else
        reason = fmt::format("rendezvous timed out after {}: {} of the at least {} nodes joined",
                             format_duration(opt_.join_timeout), nodes_.size(), opt_.min_nodes);
      fail(std::move(reason), missing);
    }
  } else if (phase_ == Phase::running) {
    std::vector<std::string> silent, labels;
    for (const auto& p : nodes_)
      if (!p.left && now - p.last_seen > opt_.heartbeat_timeout) {
        silent.push_back(p.host);
        labels.push_back(node_label(p));
      }
    if (!silent.empty())
      fail(fmt::format("{} stopped sending heartbeats (none for more than {}); stopping the job",
                       listed(labels, labels.size()), format_duration(opt_.heartbeat_timeout)),
           silent);
  }
}

json Store::state_for(const Participant& p) const {
  json r{{"ok", true},
         {"phase", phase_name(phase_)},
         {"joined", nodes_.size()},
         {"min", opt_.min_nodes},
         {"max", opt_.max_nodes},
         {"waiting_for", waiting_for(kListedHosts)},
         {"waiting", missing_.size()},
         {"progress", progress()}};
  if (assignment_ && p.node_rank >= 0) {
    r["node_rank"] = p.node_rank;
    r["assignment"] = to_json(for_node(*assignment_, p.node_rank));
  }
  if (phase_ == Phase::failed) {
    r["reason"] = reason_;
    r["failed_nodes"] = std::vector<std::string>(
        failed_nodes_.begin(), failed_nodes_.begin() + static_cast<long>(std::min(failed_nodes_.size(), kListedHosts)));
  }
  return r;
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
  if (Participant* p = find(id)) {  // a retry after a lost reply
    p->last_seen = now;
    return {state_for(*p), false};
  }
  if (phase_ == Phase::failed) return decline("the job has already failed: " + reason_);
  if (phase_ != Phase::joining)
    return decline(fmt::format("the job already formed with {} nodes; node '{}' is not part of it",
                               assignment_ ? assignment_->nodes.size() : 0, *host));
  if (!opt_.expected_hosts.empty()) {
    auto e = expected_index_.find(*host);
    if (e == expected_index_.end())
      return decline(fmt::format("host '{}' is not in this job's host list ({})", *host,
                                 listed(opt_.expected_hosts, opt_.expected_hosts.size())));
    if (!missing_.count(e->second)) return decline(fmt::format("host '{}' has already joined this job", *host));
    missing_.erase(e->second);
  }
  if (static_cast<int>(nodes_.size()) >= opt_.max_nodes)
    return decline(fmt::format("the job is full ({} nodes)", opt_.max_nodes));
  index_.emplace(id, nodes_.size());
  nodes_.push_back({id, *host, addr, static_cast<int>(*slots_it), now, -1, false});
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
  if (*op == "fail") {
    std::string why = text_field(req, "reason", kMaxReasonBytes).value_or("no reason given");
    fail(fmt::format("{} reported a failure: {}", node_label(*p), why), {p->host});
  } else if (*op == "leave") {
    if (phase_ == Phase::joining) {
      json r = state_for(*p);
      const std::string gone = *id;
      remove_nodes([&](const Participant& q) { return q.id == gone; });
      update_last_call(clock_.now());
      r["progress"] = progress();
      return {r, false};
    }
    p->left = true;
    if (phase_ == Phase::running && std::all_of(nodes_.begin(), nodes_.end(), [](const Participant& q) { return q.left; })) {
      phase_ = Phase::finished;
      changed();
    }
  }
  return {state_for(*p), false};
}

}  // namespace mtrain::rendezvous

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
  start_ = clock_.now();
}

Store::Participant* Store::find(const std::string& id) {
  for (auto& p : nodes_)
    if (p.id == id) return &p;
  return nullptr;
}

std::string Store::node_label(const Participant& p) const {
  if (p.node_rank >= 0) return fmt::format("node '{}' (node rank {})", p.host, p.node_rank);
  return fmt::format("node '{}'", p.host);
}

std::vector<std::string> Store::waiting_for() const {
  std::vector<std::string> out;
  for (const auto& h : opt_.expected_hosts)
    if (std::none_of(nodes_.begin(), nodes_.end(), [&](const Participant& p) { return p.host == h; }))
      out.push_back(h);
  return out;
}

std::string Store::progress() const {
  std::vector<std::string> hosts;
  for (const auto& p : nodes_) hosts.push_back(p.host);
  switch (phase_) {
    case Phase::joining: {
      int n = static_cast<int>(nodes_.size());
      std::string line;
      if (!opt_.expected_hosts.empty()) {
        line = fmt::format("{}/{} nodes joined", n, opt_.expected_hosts.size());
        auto missing = waiting_for();
        if (!missing.empty()) line += "; waiting for: " + str::join(missing, ", ");
      } else if (opt_.min_nodes == opt_.max_nodes) {
        line = fmt::format("{}/{} nodes joined", n, opt_.max_nodes);
        if (n) line += " (" + str::join(hosts, ", ") + ")";
      } else {
        line = fmt::format("{} nodes joined (need {} to {})", n, opt_.min_nodes, opt_.max_nodes);
        if (n) line += ": " + str::join(hosts, ", ");
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
}

void Store::abort(const std::string& reason) { fail(reason, {}); }

void Store::update_last_call(TimePoint now) {
  if (static_cast<int>(nodes_.size()) < opt_.min_nodes) last_call_deadline_.reset();
  else if (!last_call_deadline_) last_call_deadline_ = now + opt_.last_call;
}

void Store::maybe_agree(TimePoint now) {
  if (phase_ != Phase::joining) return;
  int n = static_cast<int>(nodes_.size());
  bool all_expected = !opt_.expected_hosts.empty() && waiting_for().empty();
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
}

void Store::tick() {
  TimePoint now = clock_.now();
  if (phase_ == Phase::joining) {
    // A node that went silent before the job formed is not waited for (it may come back and rejoin).
    nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(),
                                [&](const Participant& p) { return now - p.last_seen > opt_.heartbeat_timeout; }),
                 nodes_.end());
    update_last_call(now);
    maybe_agree(now);
    if (phase_ == Phase::joining && now - start_ >= opt_.join_timeout) {
      auto missing = waiting_for();
      std::string joined = fmt::format("{} joined", nodes_.size());
      std::string reason;
      if (!missing.empty())
        reason = fmt::format("rendezvous timed out after {}: {}/{} nodes joined; never joined: {}",
                             format_duration(opt_.join_timeout), nodes_.size(), opt_.expected_hosts.size(),
                             str::join(missing, ", "));
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
                       str::join(labels, ", "), format_duration(opt_.heartbeat_timeout)),
           silent);
  }
}

json Store::state_for(const Participant& p) const {
  json r{{"ok", true},
         {"phase", phase_name(phase_)},
         {"joined", nodes_.size()},
         {"min", opt_.min_nodes},
         {"max", opt_.max_nodes},
         {"waiting_for", waiting_for()},
         {"progress", progress()}};
  if (assignment_ && p.node_rank >= 0) {
    r["node_rank"] = p.node_rank;
    r["assignment"] = to_json(*assignment_);
  }
  if (phase_ == Phase::failed) {
    r["reason"] = reason_;
    r["failed_nodes"] = failed_nodes_;
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
    if (std::find(opt_.expected_hosts.begin(), opt_.expected_hosts.end(), *host) == opt_.expected_hosts.end())
      return decline(fmt::format("host '{}' is not in this job's host list ({})", *host,
                                 str::join(opt_.expected_hosts, ", ")));
    if (std::any_of(nodes_.begin(), nodes_.end(), [&](const Participant& p) { return p.host == *host; }))
      return decline(fmt::format("host '{}' has already joined this job", *host));
  }
  if (static_cast<int>(nodes_.size()) >= opt_.max_nodes)
    return decline(fmt::format("the job is full ({} nodes)", opt_.max_nodes));
  nodes_.push_back({id, *host, addr, static_cast<int>(*slots_it), now, -1, false});
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
  tick();
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
      nodes_.erase(nodes_.begin() + (p - nodes_.data()));
      update_last_call(clock_.now());
      r["progress"] = progress();
      return {r, false};
    }
    p->left = true;
    if (phase_ == Phase::running && std::all_of(nodes_.begin(), nodes_.end(), [](const Participant& q) { return q.left; }))
      phase_ = Phase::finished;
  }
  return {state_for(*p), false};
}

}  // namespace mtrain::rendezvous

#include "lib/rendezvous/etcd_memory.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::rendezvous {

namespace {
bool kv_has_prefix(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }
}  // namespace

void MemoryKv::expire_locked() {
  const TimePoint now = clock_.now();
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    for (auto kv = kv_.begin(); kv != kv_.end();) {
      if (kv->second.lease == it->first) {
        changed_locked(kv->first);
        kv = kv_.erase(kv);
      } else {
        ++kv;
      }
    }
    it = leases_.erase(it);
  }
}

void MemoryKv::changed_locked(const std::string& key) {
  ++revision_;
  last_change_[key] = revision_;
  cv_.notify_all();
}

void MemoryKv::write_locked(const std::string& key, const std::string& value, int64_t lease) {
  if (lease != 0 && !leases_.count(lease))
    throw Error(fmt::format("etcd: lease {} not found (it expired)", lease), {}, 1);
  changed_locked(key);
  auto& kv = kv_[key];
  if (kv.create_revision == 0) kv.create_revision = revision_;
  kv.key = key;
  kv.value = value;
  kv.mod_revision = revision_;
  kv.lease = lease;
}

RangeResult MemoryKv::range_prefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  expire_locked();
  RangeResult r;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && kv_has_prefix(it->first, prefix); ++it) r.kvs.push_back(it->second);
  r.revision = revision_;
  return r;
}

RangeResult MemoryKv::first_created(const std::string& prefix, int64_t limit) {
  RangeResult r = range_prefix(prefix);
  std::sort(r.kvs.begin(), r.kvs.end(),
            [](const KeyValue& a, const KeyValue& b) { return a.create_revision < b.create_revision; });
  if (limit > 0 && static_cast<int64_t>(r.kvs.size()) > limit) r.kvs.resize(static_cast<size_t>(limit));
  return r;
}

RangeResult MemoryKv::read_locked(const RangeOp& op) const {
  RangeResult r;
  r.revision = revision_;
  auto take = [&](const KeyValue& kv) {
    ++r.count;
    if (!op.count_only) r.kvs.push_back(kv);
  };
  if (op.prefix) {
    for (auto it = kv_.lower_bound(op.key); it != kv_.end() && kv_has_prefix(it->first, op.key); ++it) take(it->second);
  } else if (auto it = kv_.find(op.key); it != kv_.end()) {
    take(it->second);
  }
  return r;
}

std::vector<RangeResult> MemoryKv::read_all(const std::vector<RangeOp>& ops) {
  std::lock_guard lock(mu_);
  expire_locked();
  std::vector<RangeResult> out;
  out.reserve(ops.size());
  for (const auto& op : ops) out.push_back(read_locked(op));
  return out;
}

TxnResult MemoryKv::txn(const std::vector<TxnCompare>& compare, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) {
  std::lock_guard lock(mu_);
  expire_locked();
  TxnResult out;
  out.succeeded = std::all_of(compare.begin(), compare.end(), [&](const TxnCompare& c) {
    auto it = kv_.find(c.key);
    switch (c.target) {
      // As etcd: a value compare on a missing key fails (an empty value cannot be told from none).
      case TxnCompare::Target::value: return it != kv_.end() && it->second.value == c.value;
      case TxnCompare::Target::mod_revision: return (it == kv_.end() ? 0 : it->second.mod_revision) == c.revision;
      case TxnCompare::Target::create_revision: return (it == kv_.end() ? 0 : it->second.create_revision) == c.revision;
    }
    return false;
  });
  const auto& branch = out.succeeded ? success : failure;
  // As etcd: a put bound to a lease that is gone fails the transaction whole, nothing written.
  for (const auto& op : branch)
    if (op.put && op.lease != 0 && !leases_.count(op.lease))
      throw Error(fmt::format("etcd: lease {} not found (it expired)", op.lease), {}, 1);
  // As etcd: the puts of one transaction share one revision.
  bool wrote = false;
  for (const auto& op : branch) {
    if (!op.put) {
      out.reads.push_back(read_locked(op.range));
      continue;
    }
    if (!wrote) ++revision_;
    wrote = true;
    last_change_[op.range.key] = revision_;
    auto& kv = kv_[op.range.key];
    if (kv.create_revision == 0) kv.create_revision = revision_;
    kv.key = op.range.key;
    kv.value = op.value;
    kv.mod_revision = revision_;
    kv.lease = op.lease;
  }
  for (auto& r : out.reads) r.revision = revision_;
  if (wrote) cv_.notify_all();
  out.revision = revision_;
  return out;
}

void MemoryKv::erase(const std::string& key) {
  std::lock_guard lock(mu_);
  expire_locked();
  if (kv_.erase(key)) changed_locked(key);
}

std::optional<KeyValue> MemoryKv::get(const std::string& key) {
  std::lock_guard lock(mu_);
  expire_locked();
  auto it = kv_.find(key);
  if (it == kv_.end()) return std::nullopt;
  return it->second;
}

std::optional<KeyValue> MemoryKv::create(const std::string& key, const std::string& value, int64_t lease) {
  std::lock_guard lock(mu_);
  expire_locked();
  auto it = kv_.find(key);
  if (it != kv_.end()) return it->second;
  write_locked(key, value, lease);
  return std::nullopt;
}

bool MemoryKv::compare_and_put(const std::string& key, int64_t mod_revision, const std::string& value) {
  std::lock_guard lock(mu_);
  expire_locked();
  auto it = kv_.find(key);
  const int64_t now_rev = it == kv_.end() ? 0 : it->second.mod_revision;
  if (now_rev != mod_revision) return false;
  write_locked(key, value, it == kv_.end() ? 0 : it->second.lease);
  return true;
}

void MemoryKv::put(const std::string& key, const std::string& value, int64_t lease) {
  std::lock_guard lock(mu_);
  expire_locked();
  write_locked(key, value, lease);
}

void MemoryKv::delete_prefix(const std::string& prefix) {
  std::lock_guard lock(mu_);
  for (auto it = kv_.lower_bound(prefix); it != kv_.end() && kv_has_prefix(it->first, prefix);) {
    changed_locked(it->first);
    it = kv_.erase(it);
  }
}

int64_t MemoryKv::grant_lease(Duration ttl) {
  std::lock_guard lock(mu_);
  const int64_t id = next_lease_++;
  leases_[id] = Lease{ttl, clock_.now() + ttl};
  return id;
}

bool MemoryKv::keep_alive(int64_t lease) {
  std::lock_guard lock(mu_);
  expire_locked();
  auto it = leases_.find(lease);
  if (it == leases_.end()) return false;
  it->second.deadline = clock_.now() + it->second.ttl;
  return true;
}

void MemoryKv::revoke(int64_t lease) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  it->second.deadline = TimePoint::min();
  expire_locked();
}

WatchResult MemoryKv::watch_prefix(const std::string& prefix, int64_t from_revision, Duration timeout) {
  std::unique_lock lock(mu_);
  auto seen = [&] {
    for (auto it = last_change_.lower_bound(prefix); it != last_change_.end() && kv_has_prefix(it->first, prefix); ++it)
      if (it->second >= from_revision) return true;
    return false;
  };
  // Real time bounds the wait; lease expiry on a ManualClock is the test's expire() call.
  WatchResult out;
  out.changed = cv_.wait_for(lock, timeout, seen);
  // The events: the keys changed since from_revision that still hold a value (a real watch lists
  // each put; the rendezvous looks only at the last value of the key it waits for).
  for (auto it = last_change_.lower_bound(prefix);
       out.changed && it != last_change_.end() && kv_has_prefix(it->first, prefix); ++it)
    if (auto kv = kv_.find(it->first); it->second >= from_revision && kv != kv_.end()) out.puts.push_back(kv->second);
  return out;
}

void MemoryKv::expire() {
  std::lock_guard lock(mu_);
  expire_locked();
}

size_t MemoryKv::size() const {
  std::lock_guard lock(mu_);
  return kv_.size();
}

}  // namespace mtrain::rendezvous

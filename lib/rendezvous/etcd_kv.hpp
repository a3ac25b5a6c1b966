#pragma once
// The part of etcd's v3 key-value API the etcd rendezvous uses: ranges under a prefix, puts
// bound to a lease, create-if-absent and compare-and-swap transactions on a key's revision,
// general transactions (compares, then reads and puts), leases (grant, keep-alive, revoke) and a
// blocking watch. EtcdHttp speaks it to a real cluster (its JSON gateway); MemoryKv is the
// in-memory twin the protocol's unit tests run on.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/rendezvous/clock.hpp"

namespace mtrain::rendezvous {

struct KeyValue {
  std::string key, value;
  int64_t create_revision = 0;  // the store revision that created it: join order
  int64_t mod_revision = 0;     // the revision of its last change: compare-and-swap
  int64_t lease = 0;
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // sorted by key
  int64_t revision = 0;       // the store's revision when read: watch from revision + 1
  int64_t count = 0;  // how many keys matched (also when only counted)
};

// One read of read_all: a key, or every key under it (prefix), or only their number (count_only).
// serializable: the member answers from its own copy without asking the leader whether it is
// current (etcd's serializable read, no quorum round): the answer may be a few revisions stale.
// Only for reads whose staleness is checked again before anything is decided on them.
struct RangeOp {
  std::string key;
  bool prefix = false;
  bool count_only = false;
  bool serializable = false;
};

// A condition of a transaction (etcd's Compare with EQUAL): the key's value is `value`, or its
// mod or create revision is `revision` (0: the key does not exist).
struct TxnCompare {
  enum class Target { value, mod_revision, create_revision };
  std::string key{};
  Target target = Target::value;
  std::string value{};
  int64_t revision = 0;
};

// One operation of a transaction's branch: a read, or a put (when `put` is set).
struct TxnOp {
  RangeOp range{};
  bool put = false;
  std::string value{};
  int64_t lease = 0;
  static TxnOp read(RangeOp op) { return TxnOp{std::move(op), false, {}, 0}; }
  static TxnOp write(std::string key, std::string value, int64_t lease = 0) {
    return TxnOp{RangeOp{std::move(key)}, true, std::move(value), lease};
  }
};

struct TxnResult {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
  std::vector<RangeResult> reads;  // one per read of the branch that ran, in its order
};

// What a watch saw: whether anything changed (or the watch had to end: read again), and the keys
// the change wrote as its events carried them, so that a waiter for one key need not read it.
struct WatchResult {
  bool changed = false;
  std::vector<KeyValue> puts;
};

class EtcdKv {
 public:
  virtual ~EtcdKv() = default;
  virtual RangeResult range_prefix(const std::string& prefix) = 0;
  // The first `limit` keys under `prefix` in creation order (join order), with the revision.
  virtual RangeResult first_created(const std::string& prefix, int64_t limit) = 0;
  virtual void erase(const std::string& key) = 0;
  // Several reads in one request, of one revision: a read-only transaction (etcd_kv.cpp), unless
  // the store has a cheaper way.
  virtual std::vector<RangeResult> read_all(const std::vector<RangeOp>& ops);
  virtual std::optional<KeyValue> get(const std::string& key) = 0;
  // Create `key` unless it exists; returns the existing value when it does (nothing written).
  virtual std::optional<KeyValue> create(const std::string& key, const std::string& value, int64_t lease = 0) = 0;
  // Write `key` only if its mod_revision is still `mod_revision` (0: only if absent).
  virtual bool compare_and_put(const std::string& key, int64_t mod_revision, const std::string& value) = 0;
  virtual void put(const std::string& key, const std::string& value, int64_t lease = 0) = 0;
  virtual void delete_prefix(const std::string& prefix) = 0;
  // If every compare holds, the success operations, else the failure ones: atomically, at one
  // revision (a write and the reads that go with it cost one request, not several).
  virtual TxnResult txn(const std::vector<TxnCompare>& compare, const std::vector<TxnOp>& success,
                        const std::vector<TxnOp>& failure) = 0;
  virtual int64_t grant_lease(Duration ttl) = 0;
  // Refresh the lease; false when it already expired (its keys are gone).
  virtual bool keep_alive(int64_t lease) = 0;
  virtual void revoke(int64_t lease) = 0;
  // Block until a key under `prefix` changes at or after `from_revision`, or `timeout` passes.
  // A start revision etcd has compacted away ends the watch at once as changed: the caller reads
  // the current state instead of waiting for events that will never come.
  virtual WatchResult watch_prefix(const std::string& prefix, int64_t from_revision, Duration timeout) = 0;
};

}  // namespace mtrain::rendezvous

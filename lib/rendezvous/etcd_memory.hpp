#pragma once
// An in-memory EtcdKv with etcd's semantics where the rendezvous depends on them: one global
// revision incremented per write, create/mod revisions per key, leases that expire on a Clock
// (deleting their keys), watches woken by writes. Thread-safe: tests run several agents on it.
#include <condition_variable>
#include <map>
#include <mutex>

#include "lib/rendezvous/etcd_kv.hpp"

namespace mtrain::rendezvous {

class MemoryKv final : public EtcdKv {
 public:
  explicit MemoryKv(const Clock& clock) : clock_(clock) {}
  RangeResult range_prefix(const std::string& prefix) override;
  RangeResult first_created(const std::string& prefix, int64_t limit) override;
  void erase(const std::string& key) override;
  std::vector<RangeResult> read_all(const std::vector<RangeOp>& ops) override;
  std::optional<KeyValue> get(const std::string& key) override;
  std::optional<KeyValue> create(const std::string& key, const std::string& value, int64_t lease) override;
  bool compare_and_put(const std::string& key, int64_t mod_revision, const std::string& value) override;
  void put(const std::string& key, const std::string& value, int64_t lease) override;
  void delete_prefix(const std::string& prefix) override;
  TxnResult txn(const std::vector<TxnCompare>& compare, const std::vector<TxnOp>& success,
                const std::vector<TxnOp>& failure) override;
  int64_t grant_lease(Duration ttl) override;
  bool keep_alive(int64_t lease) override;
  void revoke(int64_t lease) override;
  WatchResult watch_prefix(const std::string& prefix, int64_t from_revision, Duration timeout) override;

  // Tests: expire leases whose time passed on the clock (a real cluster does it by itself).
  void expire();
  size_t size() const;

 private:
  struct Lease {
    Duration ttl;
    TimePoint deadline;
  };
  void expire_locked();
  void write_locked(const std::string& key, const std::string& value, int64_t lease);
  void changed_locked(const std::string& key);
  RangeResult read_locked(const RangeOp& op) const;

  const Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, KeyValue> kv_;
  std::map<int64_t, Lease> leases_;
  std::map<std::string, int64_t> last_change_;  // key (deleted ones too) → revision of its last change
  int64_t revision_ = 1;
  int64_t next_lease_ = 1000;
};

}  // namespace mtrain::rendezvous

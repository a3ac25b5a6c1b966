#pragma once
// EtcdKv over etcd's native gRPC API (etcd_api.proto: KV, Watch, Lease, Auth, Maintenance), the
// API etcdctl and etcd's own clients speak. Against the JSON gateway (etcd_http.hpp) it saves the
// member a JSON decode and encode and a second, internal gRPC call per request: at 512 nodes
// joining at once etcd spent about half its CPU in the gateway (README, `mtrain bench
// rendezvous`). One HTTP/2 connection per member, opened on first use and kept; a watch or a
// keep-alive is a stream on it, not a connection of its own.
//
// Same contract as EtcdHttp: every call has a deadline (the op timeout; a watch waits its own
// time once etcd confirmed it); a member that does not answer (refused, reset, timed out, "no
// leader") is skipped for the next one, the one that answered is tried first next time (the first
// try goes to a random member); only when none answers is the call an mtrain::Error (exit 1)
// naming every member and what each said. Username/password: the token Auth.Authenticate gives
// goes in each call's "token" metadata, renewed once when etcd says it is no longer valid.
// Configuration errors are exit 2 at once, no other member tried: a wrong password, auth enabled
// and no user, a permission denied, and TLS that cannot work (a member that speaks TLS with
// plain text configured, an untrusted server certificate, a refused client certificate) — the
// latter told by one TLS handshake of our own (etcd_tls.hpp), since gRPC reports every failed
// handshake as the member being unavailable. With client-certificate auth etcd takes the
// certificate's Common Name as the user, as etcdctl does (the gateway cannot pass it on).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/rendezvous/etcd_kv.hpp"
#include "lib/rendezvous/etcd_options.hpp"

namespace mtrain::rendezvous {

class EtcdGrpc final : public EtcdKv {
 public:
  explicit EtcdGrpc(EtcdOptions options);
  ~EtcdGrpc() override;
  EtcdGrpc(const EtcdGrpc&) = delete;
  EtcdGrpc& operator=(const EtcdGrpc&) = delete;
  RangeResult range_prefix(const std::string& prefix) override;
  RangeResult first_created(const std::string& prefix, int64_t limit) override;
  void erase(const std::string& key) override;
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

  // The server version of the first member that answers (Maintenance.Status).
  std::string version();

  struct Impl;  // etcd_grpc.cpp: the channels, stubs and the call loop

 private:
  void delete_range(const std::string& key, const std::string& range_end);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mtrain::rendezvous

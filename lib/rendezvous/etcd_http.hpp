#pragma once
// EtcdKv over etcd's v3 JSON gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/…, /v3/watch;
// keys and values base64) with Boost.Beast, on one connection kept open to the member that
// answered last (a watch gets its own while it waits). Every call has a deadline; a member that does not
// answer (refused, reset, timed out) is skipped for the next one of the list, and the one that
// answered is tried first next time (the first try goes to a random member). Only when no member answers is the call an
// mtrain::Error (exit 1) naming every endpoint and what each said. Username/password: the token from
// /v3/auth/authenticate goes in each request's Authorization header (renewed once when etcd
// says it is no longer valid: simple tokens expire after etcd's --auth-token-ttl unused, and
// belong to the member that issued them). TLS (https members, etcd_tls.hpp): a refused
// certificate, a wrong password or a missing user is the configuration's fault, not the
// member's: an mtrain::Error with exit 2 at once, no other member tried.
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/rendezvous/etcd_kv.hpp"
#include "lib/rendezvous/etcd_options.hpp"

namespace mtrain::rendezvous {

struct EtcdConnection;  // etcd_http.cpp: an open connection to one member

class EtcdHttp final : public EtcdKv {
 public:
  explicit EtcdHttp(EtcdOptions options);
  ~EtcdHttp() override;
  EtcdHttp(const EtcdHttp&) = delete;
  EtcdHttp& operator=(const EtcdHttp&) = delete;
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

  // GET /version of the first member that answers: {"etcdserver":…, "etcdcluster":…}.
  nlohmann::json version();
  // One gateway call (path like "/v3/kv/range") with failover; for the above and tests.
  nlohmann::json call(const std::string& path, const nlohmann::json& body);

 private:
  // `stream_until`: for streaming replies (watch), stop reading once the body so far contains one
  // of them (on a connection of its own); none: read the whole reply (on the kept connection).
  // `wait`: how long a streaming reply may take.
  std::string exchange(size_t member, const std::string& method, const std::string& path, const std::string& body,
                       const std::vector<std::string>& stream_until, Duration wait);
  std::unique_ptr<EtcdConnection> connect(size_t member) const;
  bool step(EtcdConnection& c, const char* name) const;
  nlohmann::json call_streaming(const std::string& path, const nlohmann::json& body,
                                const std::vector<std::string>& until, Duration wait, bool* timed_out);
  void authenticate_locked(size_t member);
  // A reply that says the configuration is wrong (TLS spoken plain, a wrong password, no user, no
  // permission): an mtrain::Error with exit 2; else returns.
  void refuse_configuration(const Endpoint& ep, const std::string& path, const std::string& msg) const;

  EtcdOptions opt_;
  std::shared_ptr<EtcdTlsContext> tls_;  // set when opt_.tls
  std::mutex mu_;
  size_t preferred_ = 0;      // the member that answered last
  std::unique_ptr<EtcdConnection> conn_;  // kept open to it between calls
  std::string auth_token_;
  bool auth_not_enabled_ = false;  // a user was given, the cluster has no auth
};

}  // namespace mtrain::rendezvous

#pragma once
// What both etcd clients (etcd_grpc.hpp: etcd's gRPC API; etcd_http.hpp: its JSON gateway) are
// given: the members, TLS, the user, the per-request deadline; and the two facts about etcd's key
// space and replies they share.
#include <cstddef>
#include <string>
#include <vector>

#include "lib/rendezvous/endpoint.hpp"
#include "lib/rendezvous/etcd_tls.hpp"
#include "lib/rendezvous/clock.hpp"

namespace mtrain::rendezvous {

inline constexpr uint16_t kDefaultEtcdPort = 2379;

struct EtcdOptions {
  std::vector<Endpoint> endpoints;  // the cluster's client URLs, in the order to try them
  bool tls = false;  // https: every member, its certificate checked (tls_files)
  EtcdTlsFiles tls_files;
  std::string username, password;  // empty username: no auth
  std::string password_source;  // where the password came from, for the error that refuses it
  Duration op_timeout{3000};  // one request and its reply, per endpoint
};

// "host1:2379,host2:2379,[::1]:2379" (port defaults to 2379; http:// or https:// before a member,
// the same scheme for all); an mtrain::Error naming `what`.
struct EtcdMembers {
  std::vector<Endpoint> endpoints;
  bool https = false;  // every member was written https://
};
EtcdMembers parse_etcd_members(const std::string& text, const std::string& what = "--rdzv-endpoint");
std::vector<Endpoint> parse_etcd_endpoints(const std::string& text, const std::string& what = "--rdzv-endpoint");

// The end of etcd's key range that holds every key starting with `prefix` (its range_end).
std::string etcd_prefix_end(std::string prefix);

// The largest reply either client reads: a range over 4096 nodes' keys is a few MB.
inline constexpr size_t kEtcdMaxReplyBytes = 64u << 20;

}  // namespace mtrain::rendezvous

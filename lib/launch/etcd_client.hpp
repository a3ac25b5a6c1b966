#pragma once
// The etcd client of a node agent (--rdzv-backend etcd) from the launch settings and the
// environment: the members (--rdzv-endpoint), TLS (https members, --rdzv-etcd-cacert/-cert/-key)
// and the user with its password. The password comes from MTRAIN_ETCD_PASSWORD or the file
// --rdzv-etcd-password-file names, never from a flag or a setting: those show in `ps`, shell
// histories, job files and `mtrain config show`.
#include "lib/launch/host_probe.hpp"
#include "lib/launch/launch.hpp"
#include "lib/rendezvous/etcd_kv.hpp"
#include "lib/rendezvous/etcd_options.hpp"

namespace mtrain::launch {

inline constexpr const char* kEtcdPasswordEnv = "MTRAIN_ETCD_PASSWORD";

// mtrain::Error (exit 2) for what cannot work: a user without a password or the reverse, two
// passwords, an unreadable password file, http:// members with certificate files.
rendezvous::EtcdOptions etcd_client_options(const MultiNodeOptions& m, const EnvMap& env);

// The client --rdzv-etcd-api names (launch.rdzv_etcd_api): etcd's gRPC API or its JSON gateway.
std::shared_ptr<rendezvous::EtcdKv> connect_etcd(const rendezvous::EtcdOptions& o, config::EtcdApi api);

}  // namespace mtrain::launch

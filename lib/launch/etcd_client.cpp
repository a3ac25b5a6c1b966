#include "lib/launch/etcd_client.hpp"

#include <sys/stat.h>

#include <fstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_grpc.hpp"
#include "lib/rendezvous/etcd_http.hpp"

namespace mtrain::launch {

namespace {

// A password file holds one line; the bound keeps a wrong path from being read whole.
constexpr off_t kPasswordFileMaxBytes = 4096;

std::string read_password_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw UsageError(fmt::format("--rdzv-etcd-password-file '{}': no such file", path),
                     "give a file whose first line is the etcd user's password, readable by the user running mtrain");
  if (st.st_size > kPasswordFileMaxBytes)
    throw UsageError(fmt::format("--rdzv-etcd-password-file '{}' has {} bytes: not a password file", path, st.st_size),
                     "its first line is the password; check the path");
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line))
    throw UsageError(fmt::format("--rdzv-etcd-password-file '{}' cannot be read or is empty", path),
                     "its first line is the password; check the file's permissions (chmod 600, owned by this user)");
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line.empty())
    throw UsageError(fmt::format("--rdzv-etcd-password-file '{}': its first line is empty", path),
                     "write the password on the first line (echo -n does not need a newline)");
  return line;
}

}  // namespace

rendezvous::EtcdOptions etcd_client_options(const MultiNodeOptions& m, const EnvMap& env) {
  rendezvous::EtcdOptions o;
  const rendezvous::EtcdMembers members = rendezvous::parse_etcd_members(m.rdzv_endpoint);
  o.endpoints = members.endpoints;
  o.tls_files = {m.rdzv_etcd_cacert, m.rdzv_etcd_cert, m.rdzv_etcd_key};
  const bool files = !m.rdzv_etcd_cacert.empty() || !m.rdzv_etcd_cert.empty() || !m.rdzv_etcd_key.empty();
  if (files && !members.https && m.rdzv_endpoint.find("http://") != std::string::npos)
    throw UsageError(fmt::format("--rdzv-endpoint '{}' names http:// members, and certificate files for TLS were given",
                                 m.rdzv_endpoint),
                     "etcd speaks TLS only on https client URLs: write https:// before every member (or none), or drop "
                     "--rdzv-etcd-cacert/-cert/-key");
  // As etcdctl: certificate files mean TLS even when the members are written without a scheme.
  o.tls = members.https || files;

  auto pass_env = env.find(kEtcdPasswordEnv);
  const bool env_password = pass_env != env.end() && !pass_env->second.empty();
  if (env_password && !m.rdzv_etcd_password_file.empty())
    throw UsageError(fmt::format("the etcd password is given twice: in {} and in --rdzv-etcd-password-file '{}'",
                                 kEtcdPasswordEnv, m.rdzv_etcd_password_file),
                     "give one of them");
  if (!m.rdzv_etcd_password_file.empty()) {
    o.password = read_password_file(m.rdzv_etcd_password_file);
    o.password_source = fmt::format("--rdzv-etcd-password-file '{}'", m.rdzv_etcd_password_file);
  } else if (env_password) {
    o.password = pass_env->second;
    o.password_source = kEtcdPasswordEnv;
  }
  o.username = m.rdzv_etcd_user;
  if (o.username.empty() && !o.password.empty())
    throw UsageError(fmt::format("an etcd password is given ({}) but no user", o.password_source),
                     "give the user with --rdzv-etcd-user (or MTRAIN_ETCD_USERNAME)");
  if (!o.username.empty() && o.password.empty())
    throw UsageError(fmt::format("--rdzv-etcd-user '{}' is given without a password", o.username),
                     fmt::format("put the password in the environment variable {} or in a file named by "
                                 "--rdzv-etcd-password-file (not on the command line, where `ps` shows it)",
                                 kEtcdPasswordEnv));
  return o;
}

std::shared_ptr<rendezvous::EtcdKv> connect_etcd(const rendezvous::EtcdOptions& o, config::EtcdApi api) {
  switch (api) {
    case config::EtcdApi::Gateway: return std::make_shared<rendezvous::EtcdHttp>(o);
    case config::EtcdApi::Grpc: break;
  }
  return std::make_shared<rendezvous::EtcdGrpc>(o);
}

}  // namespace mtrain::launch

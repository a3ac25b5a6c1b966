// The node rendezvous the job is configured for (--rdzv-backend etcd, --rdzv-endpoint, or the
// same settings from the environment and the user file): does each etcd member answer, and with
// which version. Asked of every member on its own, so a report names the one that is down.
#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/envreport/report.hpp"
#include "lib/rendezvous/etcd_grpc.hpp"
#include "lib/rendezvous/etcd_http.hpp"

namespace mtrain::envreport {

json probe_rendezvous(const std::string& backend, const std::string& endpoint, int timeout_ms,
                      const rendezvous::EtcdTlsFiles& tls, config::EtcdApi api) {
  json r = {{"backend", backend}, {"endpoint", endpoint.empty() ? json(nullptr) : json(endpoint)}};
  if (backend != "etcd") return r;
  r["api"] = config::to_string(api);
  if (endpoint.empty()) {
    r["error"] = "no --rdzv-endpoint (launch.rdzv_endpoint) lists the etcd members";
    return r;
  }
  std::vector<rendezvous::Endpoint> eps;
  bool https = false;
  try {
    const rendezvous::EtcdMembers members = rendezvous::parse_etcd_members(endpoint);
    eps = members.endpoints;
    https = members.https || !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty();
  } catch (const Error& e) {
    r["error"] = e.message();
    return r;
  }
  json members = json::array();
  int answered = 0;
  for (const auto& ep : eps) {
    json m = {{"endpoint", ep.str()}, {"answered", false}};
    try {
      rendezvous::EtcdOptions o;
      o.endpoints = {ep};
      o.tls = https;
      o.tls_files = tls;
      o.op_timeout = rendezvous::Duration(std::clamp(timeout_ms, 100, 3000));
      if (api == config::EtcdApi::Gateway) {
        const json v = rendezvous::EtcdHttp(o).version();
        m["etcdserver"] = v.value("etcdserver", "");
        m["etcdcluster"] = v.value("etcdcluster", "");
      } else {
        m["etcdserver"] = rendezvous::EtcdGrpc(o).version();
      }
      m["answered"] = true;
      ++answered;
    } catch (const Error& e) {
      // The client's message lists every member it tried: here only this one, after its name.
      const std::string& msg = e.message();
      const std::string own = ep.str() + ": ";
      const size_t at = msg.find(own);
      m["error"] = at == std::string::npos ? msg : msg.substr(at + own.size());
    }
    members.push_back(m);
  }
  r["members"] = members;
  r["answered"] = answered;
  return r;
}

}  // namespace mtrain::envreport

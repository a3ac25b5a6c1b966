#pragma once
// TLS to etcd (https members), as etcd's own clients do it: the server certificate is verified
// against the CA file the user names (else the system's CA certificates) and must name the host
// or address the member was given as; a client certificate and key are presented when etcd asks
// for one (its --client-cert-auth: mutual TLS). OpenSSL through Boost.Asio: only this file and
// etcd_http.cpp see it, so the rendezvous' other users (and never the worker) do not.
#include <memory>
#include <optional>
#include <string>

#include "lib/core/error.hpp"

namespace boost::asio::ssl {
class context;
}
namespace boost::system {
class error_code;
}
typedef struct ssl_st SSL;

namespace mtrain::rendezvous {

struct EtcdTlsFiles {
  std::string ca_file;  // PEM CA certificates that signed etcd's --cert-file; empty: the system's
  std::string cert_file;  // PEM client certificate (etcd --client-cert-auth); empty: none
  std::string key_file;  // its private key (PEM); given exactly when cert_file is
};

// The client's TLS context, built once per EtcdHttp: the files are read here, so a missing or
// unreadable one is an mtrain::Error (exit 2) naming it before anything is sent.
class EtcdTlsContext {
 public:
  explicit EtcdTlsContext(const EtcdTlsFiles& files);
  ~EtcdTlsContext();
  boost::asio::ssl::context& context() { return *ctx_; }
  // Before the handshake with `host`: the name sent for SNI (names only) and the name or address
  // the server certificate has to list.
  void prepare(SSL* ssl, const std::string& host) const;
  // Whether a TLS failure says the configuration is wrong (an untrusted server certificate, a
  // refused or missing client certificate, TLS against a plain-HTTP member) rather than that the
  // member went away mid-connection. Then returns the one-paragraph error for `member`.
  // `ssl`: the connection's handle (for the certificate check's verdict).
  std::optional<Error> refusal(const boost::system::error_code& ec, SSL* ssl, const std::string& member) const;

 private:
  EtcdTlsFiles files_;
  std::unique_ptr<boost::asio::ssl::context> ctx_;
};

}  // namespace mtrain::rendezvous

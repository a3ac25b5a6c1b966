#include "lib/rendezvous/etcd_tls.hpp"

#include <sys/stat.h>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl.hpp>
#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace mtrain::rendezvous {

namespace ssl = boost::asio::ssl;

namespace {

// A certificate or key file is a few KB; a bound keeps a wrong path (a disk image, a device)
// from being read whole by OpenSSL.
constexpr off_t kEtcdTlsFileMaxBytes = 1 << 20;

std::string openssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "no reason given";
  const char* r = ERR_reason_error_string(e);
  return r ? r : fmt::format("OpenSSL error {:#x}", e);
}

// The file must be a readable regular file of bounded size; `flag` names the setting that gave it.
void check_tls_file(const std::string& path, const char* flag, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    throw Error(fmt::format("{} '{}': no such file (the {} for TLS to etcd)", flag, path, what),
                "give the path of the PEM file, readable by the user running mtrain on every node");
  if (st.st_size > kEtcdTlsFileMaxBytes)
    throw Error(fmt::format("{} '{}' has {} bytes: not a PEM {} (those are a few KB)", flag, path, st.st_size, what),
                "check the path");
}

// OpenSSL would otherwise ask for an encrypted key's passphrase on the terminal: no prompt, the
// load fails and says so.
int no_passphrase(char*, int, int, void*) { return 0; }

}  // namespace

EtcdTlsContext::EtcdTlsContext(const EtcdTlsFiles& files)
    : files_(files), ctx_(std::make_unique<ssl::context>(ssl::context::tls_client)) {
  SSL_CTX* ctx = ctx_->native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_default_passwd_cb(ctx, &no_passphrase);
  ctx_->set_verify_mode(ssl::verify_peer);
  if (files_.ca_file.empty()) {
    SSL_CTX_set_default_verify_paths(ctx);
  } else {
    check_tls_file(files_.ca_file, "--rdzv-etcd-cacert", "CA certificate");
    if (SSL_CTX_load_verify_locations(ctx, files_.ca_file.c_str(), nullptr) != 1)
      throw Error(fmt::format("--rdzv-etcd-cacert '{}' holds no PEM CA certificate OpenSSL can read: {}",
                              files_.ca_file, openssl_reason()),
                  "give the CA certificate (-----BEGIN CERTIFICATE-----) that signed etcd's --cert-file");
  }
  if (files_.cert_file.empty() != files_.key_file.empty())
    throw Error(files_.cert_file.empty() ? "--rdzv-etcd-key was given without --rdzv-etcd-cert"
                                         : "--rdzv-etcd-cert was given without --rdzv-etcd-key",
                "a client certificate (mutual TLS) takes both: the certificate and its private key");
  if (!files_.cert_file.empty()) {
    check_tls_file(files_.cert_file, "--rdzv-etcd-cert", "client certificate");
    check_tls_file(files_.key_file, "--rdzv-etcd-key", "client key");
    if (SSL_CTX_use_certificate_chain_file(ctx, files_.cert_file.c_str()) != 1)
      throw Error(fmt::format("--rdzv-etcd-cert '{}' holds no PEM certificate OpenSSL can read: {}", files_.cert_file,
                              openssl_reason()),
                  "give the client certificate (-----BEGIN CERTIFICATE-----) signed by etcd's --trusted-ca-file");
    if (SSL_CTX_use_PrivateKey_file(ctx, files_.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
      throw Error(fmt::format("--rdzv-etcd-key '{}' holds no unencrypted PEM private key OpenSSL can read: {}",
                              files_.key_file, openssl_reason()),
                  "give the certificate's private key without a passphrase (mtrain asks for none), readable only by "
                  "its user (chmod 600)");
    if (SSL_CTX_check_private_key(ctx) != 1)
      throw Error(fmt::format("--rdzv-etcd-key '{}' is not the private key of --rdzv-etcd-cert '{}': {}",
                              files_.key_file, files_.cert_file, openssl_reason()),
                  "give the key the certificate was made from");
  }
}

EtcdTlsContext::~EtcdTlsContext() = default;

void EtcdTlsContext::prepare(SSL* s, const std::string& host) const {
  boost::system::error_code not_ip;
  boost::asio::ip::make_address(host, not_ip);
  if (!not_ip) {
    // An address: the certificate must list it as an IP SAN (SNI carries names only).
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(s), host.c_str());
    return;
  }
  std::string name = host;
  SSL_ctrl(s, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, name.data());
  SSL_set1_host(s, host.c_str());
}

std::optional<Error> EtcdTlsContext::refusal(const boost::system::error_code& ec, SSL* s,
                                             const std::string& member) const {
  if (ec.category() != boost::asio::error::get_ssl_category()) return std::nullopt;
  const char* ca = files_.ca_file.empty() ? "the system's CA certificates (no --rdzv-etcd-cacert)" : nullptr;
  switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED: {
      const long verdict = s ? SSL_get_verify_result(s) : X509_V_OK;
      return Error(fmt::format("etcd member {} is not trusted: its server certificate failed the check against {} ({})",
                               member, ca ? ca : fmt::format("--rdzv-etcd-cacert '{}'", files_.ca_file),
                               X509_verify_cert_error_string(verdict)),
                   "give --rdzv-etcd-cacert the CA certificate that signed etcd's --cert-file, and name each member "
                   "by a host name or address that certificate lists (openssl x509 -noout -text -in server.crt)");
    }
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_SSLV3_ALERT_HANDSHAKE_FAILURE:
      if (files_.cert_file.empty())
        return Error(fmt::format("etcd member {} refused the connection: it asks every client for a certificate "
                                 "(etcd --client-cert-auth) and this node has none ({})",
                                 member, ERR_reason_error_string(static_cast<unsigned long>(ec.value()))),
                     "give --rdzv-etcd-cert and --rdzv-etcd-key: a client certificate signed by the CA etcd's "
                     "--trusted-ca-file names, and its key");
      return Error(fmt::format("etcd member {} refused the client certificate --rdzv-etcd-cert '{}' ({})", member,
                               files_.cert_file, ERR_reason_error_string(static_cast<unsigned long>(ec.value()))),
                   "give a client certificate signed by the CA etcd's --trusted-ca-file names (openssl verify -CAfile "
                   "that-ca.crt client.crt), with the client-auth usage");
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_PACKET_LENGTH_TOO_LONG:
      return Error(fmt::format("etcd member {} does not speak TLS on that port (it answered in plain HTTP)", member),
                   "drop https:// and the --rdzv-etcd-cacert/-cert/-key files, or give the port of its https "
                   "--listen-client-urls");
    default: return std::nullopt;
  }
}

}  // namespace mtrain::rendezvous

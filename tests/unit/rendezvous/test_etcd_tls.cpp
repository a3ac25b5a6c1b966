#include <catch2/catch.hpp>

#include <fstream>

#include <boost/asio/ssl.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "temp_dir.hpp"
#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_tls.hpp"

using namespace mtrain::rendezvous;

namespace {

std::string error_of(const EtcdTlsFiles& files) {
  try {
    EtcdTlsContext ctx(files);
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    return e.paragraph();
  }
  return "";
}

boost::system::error_code ssl_error(int reason) {
  return {static_cast<int>(ERR_PACK(ERR_LIB_SSL, 0, reason)), boost::asio::error::get_ssl_category()};
}

}  // namespace

TEST_CASE("certificate files that cannot work are refused when the client is made, naming the flag", "[etcd_tls]") {
  mtrain::testing::TempDir dir;
  const std::string junk = dir.path.string() + "/junk.pem";
  std::ofstream(junk) << "not a certificate\n";
  CHECK(error_of({dir.path.string() + "/missing.crt", "", ""})
            .find("--rdzv-etcd-cacert '" + dir.path.string() + "/missing.crt': no such file") != std::string::npos);
  CHECK(error_of({junk, "", ""}).find("holds no PEM CA certificate") != std::string::npos);
  CHECK(error_of({"", junk, ""}).find("--rdzv-etcd-cert was given without --rdzv-etcd-key") != std::string::npos);
  CHECK(error_of({"", junk, junk}).find("--rdzv-etcd-cert '" + junk + "' holds no PEM certificate") !=
        std::string::npos);
  CHECK(error_of({"", "", ""}).empty());  // no CA file: the system's
}

TEST_CASE("TLS failures that mean a wrong configuration are told apart from a member going away", "[etcd_tls]") {
  EtcdTlsContext system_cas(EtcdTlsFiles{});
  auto untrusted = system_cas.refusal(ssl_error(SSL_R_CERTIFICATE_VERIFY_FAILED), nullptr, "e1:2379");
  REQUIRE(untrusted);
  CHECK(untrusted->exit_code() == 2);
  CHECK(untrusted->message().find("etcd member e1:2379 is not trusted") != std::string::npos);
  CHECK(untrusted->message().find("the system's CA certificates") != std::string::npos);

  auto no_cert = system_cas.refusal(ssl_error(SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED), nullptr, "e1:2379");
  REQUIRE(no_cert);
  CHECK(no_cert->message().find("asks every client for a certificate") != std::string::npos);
  CHECK(no_cert->hint().find("--rdzv-etcd-cert") != std::string::npos);

  auto plain = system_cas.refusal(ssl_error(SSL_R_WRONG_VERSION_NUMBER), nullptr, "e1:2379");
  REQUIRE(plain);
  CHECK(plain->message().find("does not speak TLS") != std::string::npos);

  // A member killed mid-reply (OpenSSL 3 reports the cut as an SSL error) or a reset connection:
  // the next member is tried, the job goes on.
  CHECK_FALSE(system_cas.refusal(ssl_error(SSL_R_UNEXPECTED_EOF_WHILE_READING), nullptr, "e1:2379"));
  CHECK_FALSE(system_cas.refusal(boost::asio::error::connection_reset, nullptr, "e1:2379"));
}

#include "lib/rendezvous/etcd_mac.hpp"

#include <array>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lib/core/error.hpp"

namespace mtrain::rendezvous {

// OpenSSL's (libcrypto, linked for TLS to etcd anyway): its SHA-256 uses the CPU's SHA extensions
// where they exist. Every agent checks the round's agreement (tens of KB at a few hundred nodes)
// against the job token, so a job of N nodes hashes N agreements as it forms.
namespace {

std::string digest_hex(const unsigned char* d, unsigned int n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  s.reserve(size_t{2} * n);
  for (unsigned int i = 0; i < n; ++i) s += {digits[d[i] >> 4], digits[d[i] & 15]};
  return s;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> d{};
  unsigned int n = 0;
  if (EVP_Digest(data.data(), data.size(), d.data(), &n, EVP_sha256(), nullptr) != 1)
    throw Error("SHA-256 failed in libcrypto", {}, kExitFailure);
  return digest_hex(d.data(), n);
}

std::string hmac_sha256_hex(std::string_view key, std::string_view message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> d{};
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), d.data(), &n) == nullptr)
    throw Error("HMAC-SHA-256 failed in libcrypto", {}, kExitFailure);
  return digest_hex(d.data(), n);
}

}  // namespace mtrain::rendezvous

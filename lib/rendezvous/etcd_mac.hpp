#pragma once
// HMAC-SHA-256, for the etcd rendezvous: the job token never goes into etcd, only a MAC under it,
// so a reader of the cluster learns nothing that lets it join, and values a rank acts on (the
// agreement) are checked against the token before use.
#include <string>
#include <string_view>

namespace mtrain::rendezvous {

// 64 lowercase hex characters.
std::string sha256_hex(std::string_view data);
std::string hmac_sha256_hex(std::string_view key, std::string_view message);

}  // namespace mtrain::rendezvous

#include "lib/rendezvous/token.hpp"

#include <algorithm>
#include <cstdint>
#include <random>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::rendezvous {

std::string generate_token() {
  std::random_device rd;  // libstdc++ reads the OS source (getrandom / /dev/urandom)
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (int i = 0; i < 8; ++i) {
    uint32_t word = rd();
    for (int b = 0; b < 4; ++b, word >>= 8) {
      out.push_back(hex[(word >> 4) & 0xf]);
      out.push_back(hex[word & 0xf]);
    }
  }
  return out;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

std::string token_or_generate(const char* env_value) {
  if (!env_value || !*env_value) return generate_token();
  std::string t = env_value;
  if (t.size() < 16)
    throw Error(fmt::format("{} is only {} characters long", kTokenEnv, t.size()),
                "Use at least 16 random characters, or unset it and mtrain generates one.");
  for (char c : t)
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f)
      throw Error(fmt::format("{} contains spaces or control characters", kTokenEnv),
                  "Use letters, digits and punctuation only, or unset it and mtrain generates one.");
  return t;
}

}  // namespace mtrain::rendezvous

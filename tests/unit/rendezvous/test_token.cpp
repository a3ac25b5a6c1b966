// Rendezvous tokens (lib/rendezvous/token.cpp): long, random and compared exactly.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "lib/core/error.hpp"
#include "lib/rendezvous/token.hpp"

using namespace mtrain::rendezvous;
using Catch::Contains;

TEST_CASE("tokens are long, random and compared exactly", "[rendezvous][token]") {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string t = generate_token();
    REQUIRE(t.size() == 64);
    REQUIRE(t.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(t);
  }
  CHECK(seen.size() == 50);
  CHECK(tokens_equal("abc", "abc"));
  CHECK_FALSE(tokens_equal("abc", "abd"));
  CHECK_FALSE(tokens_equal("abc", "abcd"));
  CHECK_FALSE(tokens_equal("", "a"));
  CHECK(token_or_generate(nullptr).size() == 64);
  CHECK(token_or_generate("").size() == 64);
  CHECK(token_or_generate("a-long-enough-secret") == "a-long-enough-secret");
  CHECK_THROWS_WITH(token_or_generate("short"), Contains("MTRAIN_RDZV_TOKEN is only 5 characters"));
  CHECK_THROWS_WITH(token_or_generate("has a space in it!"), Contains("spaces"));
}

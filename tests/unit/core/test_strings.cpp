#include <catch2/catch.hpp>

#include "lib/core/strings.hpp"

using namespace mtrain;

TEST_CASE("split keeps empty fields", "[core]") {
  CHECK(str::split("a,,b", ',') == std::vector<std::string>{"a", "", "b"});
  CHECK(str::split("", ',') == std::vector<std::string>{""});
}

TEST_CASE("parse_uint is strict", "[core]") {
  CHECK(str::parse_uint("0") == 0);
  CHECK(str::parse_uint("42") == 42);
  CHECK_FALSE(str::parse_uint("-1"));
  CHECK_FALSE(str::parse_uint("1x"));
  CHECK_FALSE(str::parse_uint(""));
  CHECK_FALSE(str::parse_uint("9999999999999999999999"));
}

TEST_CASE("closest suggests plausible typos only", "[core]") {
  std::vector<std::string> c{"strategy", "model", "max-steps"};
  CHECK(str::closest("stratgy", c) == std::string("strategy"));
  CHECK(str::closest("max_steps", c) == std::string("max-steps"));
  CHECK_FALSE(str::closest("zzzzzzzzzz", c));
}

TEST_CASE("closest counts swapped neighbours as one typo", "[core]") {
  // Issue 45: `--strategy fdsp` suggested ddp (two substitutions, listed first) over fsdp.
  CHECK(str::edit_distance("fdsp", "fsdp") == 1);
  CHECK(str::edit_distance("fdsp", "ddp") == 2);
  CHECK(str::edit_distance("ab", "ba") == 1);
  CHECK(str::edit_distance("kitten", "sitting") == 3);
  CHECK(str::edit_distance("", "abc") == 3);
  const std::vector<std::string> strategies{"auto", "ddp", "zero1", "zero2", "zero3", "fsdp"};
  CHECK(str::closest("fdsp", strategies) == std::string("fsdp"));
  CHECK(str::closest("zeor2", strategies) == std::string("zero2"));
}

TEST_CASE("shell_quote round-trips through sh", "[core]") {
  CHECK(str::shell_quote("plain") == "plain");
  CHECK(str::shell_quote("") == "''");
  CHECK(str::shell_quote("a b") == "'a b'");
  CHECK(str::shell_quote("it's") == "'it'\\''s'");
  CHECK(str::shell_quote("$(rm -rf /); x") == "'$(rm -rf /); x'");
}

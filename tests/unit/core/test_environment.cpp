// The process environment as a map (lib/core/environment.cpp): split at the first '=', values
// kept whole, what is unset absent.
#include <catch2/catch.hpp>

#include <cstdlib>

#include "lib/core/environment.hpp"

TEST_CASE("environment: the process environment as a map", "[core][environment]") {
  ::setenv("MTRAIN_TEST_ENV_A", "x=y=z", 1);
  ::setenv("MTRAIN_TEST_ENV_EMPTY", "", 1);
  ::unsetenv("MTRAIN_TEST_ENV_UNSET");
  const auto env = mtrain::process_environment();
  CHECK(env.at("MTRAIN_TEST_ENV_A") == "x=y=z");
  CHECK(env.at("MTRAIN_TEST_ENV_EMPTY").empty());
  CHECK(env.count("MTRAIN_TEST_ENV_UNSET") == 0);
  ::unsetenv("MTRAIN_TEST_ENV_A");
  CHECK(mtrain::process_environment().count("MTRAIN_TEST_ENV_A") == 0);
  ::unsetenv("MTRAIN_TEST_ENV_EMPTY");
}

// own_executable() (core/own_executable.hpp): the running binary, which `mtrain` uses to find the
// worker installed beside it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>

#include "lib/core/own_executable.hpp"

TEST_CASE("own_executable is this test binary", "[core][own_executable]") {
  const std::string self = mtrain::own_executable();
  REQUIRE_FALSE(self.empty());
  CHECK(std::filesystem::path(self).is_absolute());
  CHECK(std::filesystem::path(self).filename() == "test_core");
  CHECK(::access(self.c_str(), X_OK) == 0);
}

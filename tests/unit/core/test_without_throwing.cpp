// Teardown that must not throw (core/without_throwing.hpp): what the work throws — an Error or
// anything else — stops there and is said on standard error.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <string>

#include "lib/core/error.hpp"
#include "lib/core/without_throwing.hpp"

namespace {

// What `f` writes to standard error (descriptor 2, as fprintf(stderr) writes it).
template <class F>
std::string stderr_of(F&& f) {
  std::FILE* tmp = std::tmpfile();
  REQUIRE(tmp);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(::fileno(tmp), 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::rewind(tmp);
  std::string out;
  for (int c; (c = std::fgetc(tmp)) != EOF;) out += static_cast<char>(c);
  std::fclose(tmp);
  return out;
}

}  // namespace

TEST_CASE("without_throwing: what the work throws is said, and goes no further", "[core][without_throwing]") {
  bool ran = false;
  CHECK(stderr_of([&] { mtrain::without_throwing("closing", [&] { ran = true; }); }).empty());
  CHECK(ran);
  CHECK(stderr_of([] {
          mtrain::without_throwing("closing the log", [] { throw mtrain::RuntimeFailure("disk full"); });
        }) == "mtrain: warning: closing the log failed: error: disk full\n");
  CHECK(stderr_of([] { mtrain::without_throwing("stopping", [] { throw 7; }); }) ==
        "mtrain: warning: stopping failed: an exception that is no std::exception\n");
  const auto throws = [] { throw 1; };
  static_assert(noexcept(mtrain::without_throwing("x", throws)));
}

// lib/fmt/format.cpp: each part of fmt that lives only in the library, called through the public
// API, with the output libfmt.so gives. Without format.cpp (or with an instance missing from its
// list) this binary does not link; with a wrong one, the outputs differ.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <locale>
#include <string>

namespace {

// A locale with grouping by three and an apostrophe, so the test needs no installed locale.
struct ApostropheGrouping : std::numpunct<char> {
  char do_thousands_sep() const override { return '\''; }
  char do_decimal_point() const override { return ','; }
  std::string do_grouping() const override { return "\3"; }
};

}  // namespace

TEST_CASE("fmt: floating point is printed shortest round-trip (dragonbox)", "[fmt]") {
  CHECK(fmt::format("{}", 0.1) == "0.1");
  CHECK(fmt::format("{}", 0.1f) == "0.1");
  CHECK(fmt::format("{}", 1e300) == "1e+300");
  CHECK(fmt::format("{}", 3.4028235e38f) == "3.4028235e+38");
  CHECK(fmt::format("{:.3f}", 2.0 / 3.0) == "0.667");
}

TEST_CASE("fmt: {:L} takes the separators from the locale passed", "[fmt]") {
  const std::locale loc(std::locale::classic(), new ApostropheGrouping);
  CHECK(fmt::format(loc, "{:L}", 1234567) == "1'234'567");
  CHECK(fmt::format(loc, "{:L}", 1.5) == "1,5");
  // Without a locale argument fmt uses the global one ("C" here): no grouping.
  CHECK(fmt::format("{:L}", 1234567) == "1234567");
}

TEST_CASE("fmt: a bad runtime format string throws fmt::format_error", "[fmt]") {
  CHECK_THROWS_AS(fmt::format(fmt::runtime("{:d}"), "text"), fmt::format_error);
  CHECK_THROWS_AS(fmt::format(fmt::runtime("{"), 1), fmt::format_error);
  CHECK(fmt::vformat("{}-{}", fmt::make_format_args(1, "a")) == "1-a");
}

// --no-prefix, --no-local-rank, --ranks-filter and the -m/--no-python contradiction, as
// apply_launch_switches writes them into LaunchOptions (moved out of apps/mtrain/cmd_launch.cpp).
#include <catch2/catch.hpp>

#include "mtrain/core/error.hpp"
#include "mtrain/launch/launch_switches.hpp"

using namespace mtrain;

TEST_CASE("launch switches: no switch keeps the prefix, every rank and --local-rank-arg", "[launch][switches]") {
  launch::LaunchOptions o;
  o.plan.local_rank_arg = true;
  launch::apply_launch_switches({}, o);
  CHECK(o.output.prefix);
  CHECK(o.output.ranks_filter.empty());
  CHECK(o.plan.local_rank_arg);
}

TEST_CASE("launch switches: --no-prefix and --no-local-rank turn their options off", "[launch][switches]") {
  launch::LaunchOptions o;
  o.plan.local_rank_arg = true;  // --local-rank-arg given too: --no-local-rank wins
  launch::LaunchSwitches s;
  s.no_prefix = true;
  s.no_local_rank = true;
  launch::apply_launch_switches(s, o);
  CHECK_FALSE(o.output.prefix);
  CHECK_FALSE(o.plan.local_rank_arg);
}

TEST_CASE("launch switches: --ranks-filter takes a list of ranks; a second call replaces the first", "[launch][switches]") {
  launch::LaunchOptions o;
  launch::LaunchSwitches s;
  s.ranks_filter = "0,3";
  launch::apply_launch_switches(s, o);
  CHECK(o.output.ranks_filter == std::set<int>{0, 3});
  s.ranks_filter = "2";
  launch::apply_launch_switches(s, o);
  CHECK(o.output.ranks_filter == std::set<int>{2});
}

TEST_CASE("launch switches: a bad --ranks-filter is refused naming the flag", "[launch][switches]") {
  launch::LaunchOptions o;
  launch::LaunchSwitches s;
  s.ranks_filter = "zero";
  try {
    launch::apply_launch_switches(s, o);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("--ranks-filter") != std::string::npos);
  }
}

TEST_CASE("launch switches: -m/--module with --no-python is refused", "[launch][switches]") {
  launch::LaunchOptions o;
  o.plan.module = true;
  o.plan.no_python = true;
  CHECK_THROWS_AS(launch::apply_launch_switches({}, o), Error);
  o.plan.no_python = false;
  CHECK_NOTHROW(launch::apply_launch_switches({}, o));
}

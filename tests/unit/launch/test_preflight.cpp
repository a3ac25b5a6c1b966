// The master port the launcher picks for --master-port 0/auto: outside the ephemeral range, so
// that no outgoing connection (the ranks' own connects to it included) can be handed it.
#include <catch2/catch.hpp>

#include <fstream>

#include "lib/launch/preflight.hpp"

using mtrain::launch::master_port_range;
using mtrain::launch::pick_free_port;

TEST_CASE("master_port_range lies outside the ephemeral range", "[launch][preflight]") {
  CHECK(master_port_range(32768, 60999) == std::pair<int, int>{10000, 32767});  // Linux default
  CHECK(master_port_range(49152, 65535) == std::pair<int, int>{10000, 49151});  // IANA's
  CHECK(master_port_range(10000, 20000) == std::pair<int, int>{20001, 65535});  // room only above
  CHECK(master_port_range(1024, 65535).first > master_port_range(1024, 65535).second);  // none
}

TEST_CASE("pick_free_port picks a bindable port below the ephemeral range", "[launch][preflight]") {
  int lo = 32768, hi = 60999;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> lo >> hi;
  const auto [first, last] = master_port_range(lo, hi);
  REQUIRE(first <= last);
  for (int i = 0; i < 20; ++i) {
    const int port = pick_free_port("127.0.0.1");
    INFO("port " << port << ", ephemeral range " << lo << "-" << hi);
    CHECK(port >= first);
    CHECK(port <= last);
    CHECK_NOTHROW(mtrain::launch::check_port_free("127.0.0.1", port));
  }
}

// Which hosts name this machine and which source address reaches a host (lib/launch/
// net_address.cpp), over the real resolver and interfaces: loopback forms are always local, the
// machine's own hostname is, a name that does not resolve is not.
#include <catch2/catch.hpp>

#include <unistd.h>

#include "lib/launch/net_address.hpp"

using namespace mtrain::launch;

namespace {
std::string own_hostname() {
  char name[256] = {0};
  REQUIRE(gethostname(name, sizeof name - 1) == 0);
  return name;
}
}  // namespace

TEST_CASE("net_address: loopback names and addresses name this machine", "[launch][net_address]") {
  for (const std::string h : {"localhost", "127.0.0.1", "127.0.1.1", "127.255.0.3", "::1"}) {
    INFO(h);
    CHECK(names_this_machine(h));
  }
  CHECK(is_local_address("127.0.0.1"));
  CHECK(is_local_address("localhost"));
  CHECK(is_local_address("127.0.0.2"));  // all of 127/8 is loopback
}

TEST_CASE("net_address: this machine's hostname is local", "[launch][net_address]") {
  const std::string me = own_hostname();
  CHECK(names_this_machine(me));
}

TEST_CASE("net_address: names that do not resolve and foreign addresses are not local", "[launch][net_address]") {
  // .invalid never resolves (RFC 2606); TEST-NET-1 (RFC 5737) is on no interface here.
  CHECK_FALSE(is_local_address("no-such-host.invalid"));
  CHECK_FALSE(names_this_machine("no-such-host.invalid"));
  CHECK_FALSE(is_local_address(""));
  CHECK_FALSE(names_this_machine("192.0.2.1"));
}

TEST_CASE("net_address: the route source address of a host", "[launch][net_address]") {
  // The kernel sends to a loopback address from loopback; no packet is sent.
  CHECK(route_source_address("127.0.0.1", 29500) == "127.0.0.1");
  const std::string to_local = route_source_address("localhost", 9);
  CHECK((to_local == "127.0.0.1" || to_local == "::1"));
  CHECK(route_source_address("no-such-host.invalid", 29500).empty());
  // Whatever the machine sends from is one of its own addresses (when it has a route at all).
  const std::string out = route_source_address("192.0.2.1", 29500);
  if (!out.empty()) CHECK(is_local_address(out));
}

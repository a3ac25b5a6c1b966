// How many connections the rendezvous server accepts (lib/rendezvous/capacity.cpp).
#include <catch2/catch.hpp>

#include "lib/rendezvous/capacity.hpp"

using namespace mtrain::rendezvous;

TEST_CASE("connection capacity: 2 per node plus headroom, within the descriptor limit", "[rendezvous][capacity]") {
  CHECK(wanted_connections(2) == 68);
  CHECK(wanted_connections(4096) == 8256);
  CHECK(connection_capacity(4096, 1 << 20) == 8256);
  CHECK(connection_capacity(4096, 1024) == 1024 - kReservedDescriptors);  // the limit binds
  CHECK(connection_capacity(512, 20000) == 1088);
  CHECK(connection_capacity(1, 10) == 1);
  CHECK(wanted_fd_limit(4096) == 8256 + kReservedDescriptors);
}

// The inventory (lib/topology/inventory.cpp): hosts found by name as written, slots counted over
// every host.
#include <catch2/catch.hpp>

#include "lib/topology/inventory.hpp"

using namespace mtrain::topology;

TEST_CASE("inventory: find_host by the name as written, total_slots over hosts", "[topology][inventory]") {
  const Inventory inv{{"node-a", "", {0, 1, 2, 3}}, {"node-b", "alice", {1, 3}}, {"node-c", "", {}}};
  REQUIRE(find_host(inv, "node-b") != nullptr);
  CHECK(find_host(inv, "node-b")->user == "alice");
  CHECK(find_host(inv, "node-b")->slots == std::vector<int>{1, 3});
  CHECK(find_host(inv, "node-a") == &inv[0]);
  CHECK(find_host(inv, "alice@node-b") == nullptr);  // the user part is not the host
  CHECK(find_host(inv, "NODE-A") == nullptr);
  CHECK(find_host({}, "node-a") == nullptr);
  CHECK(total_slots(inv) == 6);
  CHECK(total_slots({}) == 0);
}

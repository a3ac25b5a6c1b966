#include <catch2/catch.hpp>

#include "lib/core/error.hpp"
#include "lib/topology/filter.hpp"

using namespace mtrain::topology;

namespace {
Inventory two_hosts() {
  return {{"worker-0", "", {0, 1, 2, 3}}, {"worker-1", "", {0, 1, 2, 3}}};
}
std::vector<int> slots_of(const Inventory& inv, const std::string& host) {
  const HostSlots* h = find_host(inv, host);
  return h ? h->slots : std::vector<int>{};
}
}  // namespace

TEST_CASE("include: bare host takes every slot, slots are kept sorted and unique", "[topology]") {
  auto inv = apply_include(two_hosts(), "worker-1");
  REQUIRE(inv.size() == 1);
  CHECK(slots_of(inv, "worker-1") == std::vector<int>{0, 1, 2, 3});
  inv = apply_include(two_hosts(), "worker-0:2,0,2@worker-1:1");
  CHECK(slots_of(inv, "worker-0") == std::vector<int>{0, 2});
  CHECK(slots_of(inv, "worker-1") == std::vector<int>{1});
}

TEST_CASE("include keeps inventory order and merges a host named twice", "[topology]") {
  auto inv = apply_include(two_hosts(), "worker-1:3@worker-0:1@worker-1:0");
  REQUIRE(inv.size() == 2);
  CHECK(inv[0].host == "worker-0");
  CHECK(slots_of(inv, "worker-1") == std::vector<int>{0, 3});
}

TEST_CASE("exclude removes slots and drops hosts left empty", "[topology]") {
  auto inv = apply_exclude(two_hosts(), "worker-0:0,1,2,3@worker-1:1");
  REQUIRE(inv.size() == 1);
  CHECK(slots_of(inv, "worker-1") == std::vector<int>{0, 2, 3});
  inv = apply_exclude(two_hosts(), "worker-1");
  CHECK(inv.size() == 1);
  CHECK(inv[0].host == "worker-0");
}

TEST_CASE("filter errors name the column and what is known", "[topology]") {
  auto inv = Inventory{{"localhost", "", {0, 1, 2}}};
  CHECK_THROWS_WITH(apply_include(inv, "localhost:0,7"),
                    Catch::Contains("column 13") && Catch::Contains("no slot 7") && Catch::Contains("0,1,2"));
  CHECK_THROWS_WITH(apply_include(inv, "localhost:0,x"), Catch::Contains("column 13") && Catch::Contains("'x'"));
  CHECK_THROWS_WITH(apply_include(inv, "localhost:0@nohost"),
                    Catch::Contains("column 13") && Catch::Contains("unknown host 'nohost'") &&
                        Catch::Contains("localhost"));
  CHECK_THROWS_WITH(apply_include(inv, "localhost:"), Catch::Contains("empty slot"));
  CHECK_THROWS_WITH(apply_include(inv, "@localhost"), Catch::Contains("column 1"));
  CHECK_THROWS_WITH(apply_exclude(inv, "localhost"), Catch::Contains("leaves no slots"));
  CHECK_THROWS_WITH(apply_include(inv, ""), Catch::Contains("empty"));
}

TEST_CASE("every single-slot include over 1..8 slots selects exactly that slot", "[topology]") {
  for (int n = 1; n <= 8; ++n) {
    Inventory inv{{"localhost", "", {}}};
    for (int s = 0; s < n; ++s) inv[0].slots.push_back(s);
    for (int s = 0; s < n; ++s) {
      auto inc = apply_include(inv, "localhost:" + std::to_string(s));
      CHECK(slots_of(inc, "localhost") == std::vector<int>{s});
      if (n > 1) CHECK(slots_of(apply_exclude(inv, "localhost:" + std::to_string(s)), "localhost").size() == size_t(n - 1));
    }
  }
}

TEST_CASE("select_hosts: --num-nodes takes the first hosts, --num-gpus the first slots", "[topology]") {
  Inventory inv{{"worker-0", "", {0, 1, 2, 3}}, {"worker-1", "", {1, 3}}, {"worker-2", "", {0, 1}}};
  HostSelection s;
  s.num_nodes = 2;
  auto out = select_hosts(inv, s);
  REQUIRE(out.size() == 2);
  CHECK(out[1].host == "worker-1");
  s.num_gpus = 2;
  out = select_hosts(inv, s);
  CHECK(slots_of(out, "worker-0") == std::vector<int>{0, 1});
  CHECK(slots_of(out, "worker-1") == std::vector<int>{1, 3});
  CHECK(select_hosts(inv, HostSelection{}).size() == 3);
}

TEST_CASE("select_hosts: the selections exclude each other and impossible counts name the host", "[topology]") {
  Inventory inv{{"worker-0", "", {0, 1}}, {"worker-1", "", {0}}};
  HostSelection s;
  s.include = "worker-0";
  s.exclude = "worker-1";
  CHECK_THROWS_WITH(select_hosts(inv, s), Catch::Contains("--include and --exclude"));
  s.exclude.clear();
  s.num_nodes = 1;
  CHECK_THROWS_WITH(select_hosts(inv, s), Catch::Contains("--include and --num-nodes/--num-gpus"));
  HostSelection g;
  g.num_gpus = 2;
  CHECK_THROWS_WITH(select_hosts(inv, g), Catch::Contains("host 'worker-1' has only 1 slot"));
  HostSelection n;
  n.num_nodes = 3;
  CHECK_THROWS_WITH(select_hosts(inv, n), Catch::Contains("more hosts than the 2 listed"));
}

TEST_CASE("DeepSpeed behaviours: excluding every slot of a host drops it, duplicates collapse", "[topology]") {
  auto inv = apply_exclude(two_hosts(), "worker-0:0,1,2,3");
  REQUIRE(inv.size() == 1);
  CHECK(inv[0].host == "worker-1");
  inv = apply_include(two_hosts(), "worker-0:1,1,1");
  CHECK(slots_of(inv, "worker-0") == std::vector<int>{1});
}

// The etcd rendezvous's agreement (lib/rendezvous/etcd_agreement): what the agent completing a
// round writes, every other agent reads its own place from, and nobody else can forge.
#include <catch2/catch.hpp>

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/rendezvous/etcd_agreement.hpp"
#include "lib/rendezvous/etcd_mac.hpp"

using namespace mtrain::rendezvous;

namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

// `n` nodes with 1, 2, 3, 1, 2, 3, … slots, laid out by assign_ranks.
Assignment layout(int n) {
  std::vector<AssignedNode> nodes;
  for (int k = 0; k < n; ++k) {
    AssignedNode node;
    node.host = fmt::format("host-{}", k);
    node.addr = fmt::format("10.0.{}.{}", k / 256, k % 256);
    node.local_world_size = 1 + k % 3;
    nodes.push_back(node);
  }
  return assign_ranks(nodes, 29500, "job");
}

std::vector<std::string> ids_of(int n) {
  std::vector<std::string> ids;
  for (int k = 0; k < n; ++k) ids.push_back(fmt::format("{:016x}", 0xabc000 + k));
  return ids;
}

// A body signed with the job's token: the MAC holds, only the format can refuse it.
std::string signed_body(const std::string& body) { return hmac_sha256_hex(kToken, body) + "\n" + body; }

}  // namespace

TEST_CASE("every node finds its place as assign_ranks laid it out, worlds 1 to 9", "[etcd_agreement]") {
  for (int n = 1; n <= 9; ++n) {
    const Assignment a = layout(n);
    const auto ids = ids_of(n);
    const Agreement agreed = Agreement::verify(sign_agreement(kToken, a, ids), kToken, "/p/r/0/agreed");
    CHECK(agreed.nnodes() == n);
    for (int k = 0; k < n; ++k) {
      const auto place = agreed.place_of(ids[static_cast<size_t>(k)], "job");
      REQUIRE(place);
      const NodeAssignment want = for_node(a, k);
      CHECK(place->self.node_rank == k);
      CHECK(place->self.host == want.self.host);
      CHECK(place->self.addr == want.self.addr);
      CHECK(place->self.first_rank == want.self.first_rank);
      CHECK(place->self.local_world_size == want.self.local_world_size);
      CHECK(place->nnodes == want.nnodes);
      CHECK(place->world_size == want.world_size);
      CHECK(place->master_addr == want.master_addr);
      CHECK(place->master_port == 29500);
      CHECK(place->run_id == "job");
    }
    CHECK_FALSE(agreed.place_of("0000000000000000", "job"));
    const auto rows = agreed.rows();
    REQUIRE(rows.size() == static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) {
      CHECK(rows[static_cast<size_t>(k)].id == ids[static_cast<size_t>(k)]);
      CHECK(rows[static_cast<size_t>(k)].host == a.nodes[static_cast<size_t>(k)].host);
    }
  }
}

TEST_CASE("an id that is a prefix of another's finds its own line", "[etcd_agreement]") {
  const Assignment a = layout(2);
  const Agreement agreed = Agreement::verify(sign_agreement(kToken, a, {"n1", "n"}), kToken, "k");
  CHECK(agreed.place_of("n", "job")->self.node_rank == 1);
  CHECK(agreed.place_of("n1", "job")->self.node_rank == 0);
}

TEST_CASE("an agreement not signed with the token is refused before its body is read", "[etcd_agreement]") {
  const std::string body = sign_agreement(kToken, layout(3), ids_of(3)).substr(65);
  for (const std::string& value : {hmac_sha256_hex("another token", body) + "\n" + body, std::string("00\n") + body,
                                   body, std::string(R"({"body":"{}","mac":"00"})"), std::string(),
                                   // One byte of the body changed after signing.
                                   signed_body(body).replace(70, 1, "9")}) {
    CHECK_THROWS_WITH(Agreement::verify(value, kToken, "/p/r/0/agreed"),
                      Catch::Contains("/p/r/0/agreed is not signed with this job's token"));
  }
}

TEST_CASE("a signed value that is not this format is refused, naming the line", "[etcd_agreement]") {
  const std::string header = "mtrain-agreement 1 2 3 29500 10.0.0.1\n";
  const std::pair<std::string, std::string> cases[] = {
      // The format of mtrain before this one: JSON lists.
      {R"({"ids":["x"],"hosts":["h"],"addrs":["h"],"slots":[1],"master_port":1})", "its first line"},
      {"mtrain-agreement 2 1 1 29500 h\nx 0 1 h h\n", "its first line"},
      {"mtrain-agreement 1 1 1 29500\nx 0 1 h h\n", "its first line"},
      {"mtrain-agreement 1 -1 1 29500 h\n", "its first line"},
      {header + "a 0 1 h h\nb 1 2 h\n", "node rank 1"},
      {header + "a 0 1 h h\nb 1 x h h\n", "node rank 1"},
      {header + "a 0 1 h h\nb 1 2 h h", "node rank 1"},  // no line end
      {header + "a 0 1  h h\nb 1 2 h h\n", "node rank 0"},  // an empty field
      {header + "a 0 1 h h\n", "it says 2 nodes but lists 1"},
      {header + "a 0 1 h h\nb 1 2 h h\nc 3 1 h h\n", "it says 2 nodes but lists 3"},
  };
  for (const auto& [body, why] : cases) {
    INFO(body);
    try {
      (void)Agreement::verify(signed_body(body), kToken, "/p/r/0/agreed");
      FAIL("accepted");
    } catch (const mtrain::Error& e) {
      CHECK_THAT(e.message(), Catch::Contains("/p/r/0/agreed is not a rendezvous agreement of this mtrain"));
      CHECK_THAT(e.message(), Catch::Contains(why));
      CHECK(e.exit_code() == mtrain::kExitFailure);
    }
  }
}

TEST_CASE("a node whose id, host or address cannot be a field is not written", "[etcd_agreement]") {
  CHECK(agreement_field_problem("node-1").empty());
  CHECK(agreement_field_problem("fe80::1%eth0").empty());
  CHECK_FALSE(agreement_field_problem("").empty());
  CHECK_FALSE(agreement_field_problem("my host").empty());
  CHECK_FALSE(agreement_field_problem("a\nb").empty());
  CHECK_FALSE(agreement_field_problem("tab\t").empty());
  Assignment a = layout(2);
  a.nodes[1].host = "bad host";
  CHECK_THROWS_WITH(sign_agreement(kToken, a, ids_of(2)), Catch::Contains("'bad host' it holds whitespace"));
  CHECK_THROWS_WITH(sign_agreement(kToken, layout(2), ids_of(3)), Catch::Contains("2 nodes was given 3 ids"));
}

TEST_CASE("the agreement of 512 nodes is one line each", "[etcd_agreement]") {
  const std::string value = sign_agreement(kToken, layout(512), ids_of(512));
  CHECK(std::count(value.begin(), value.end(), '\n') == 1 + 1 + 512);
  CHECK(value.size() < 120 + 512 * 48);
}

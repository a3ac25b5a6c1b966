// Frames, tokens, the flag grammars and the connection capacity.
#include <catch2/catch.hpp>

#include <set>

#include "mtrain/core/error.hpp"
#include "mtrain/rendezvous/assignment.hpp"
#include "mtrain/rendezvous/capacity.hpp"
#include "mtrain/rendezvous/endpoint.hpp"
#include "mtrain/rendezvous/frame.hpp"
#include "mtrain/rendezvous/token.hpp"

using namespace mtrain::rendezvous;
using Catch::Contains;

namespace {
std::array<unsigned char, kFrameHeaderBytes> header_of(const std::string& frame) {
  std::array<unsigned char, kFrameHeaderBytes> h{};
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<unsigned char>(frame[i]);
  return h;
}
}  // namespace

TEST_CASE("frames round-trip and enforce magic, size and nesting", "[rendezvous][frame]") {
  nlohmann::json msg{{"op", "join"}, {"host", "worker-0"}, {"slots", 4}};
  std::string f = encode_frame(msg);
  REQUIRE(f.substr(0, 4) == "MTR1");
  size_t n = decode_header(header_of(f), kDefaultMaxFrameBytes);
  CHECK(n == f.size() - kFrameHeaderBytes);
  CHECK(decode_payload(f.substr(kFrameHeaderBytes)) == msg);

  CHECK_THROWS_WITH(decode_header(header_of("GET / HTTP/1.1"), 1024), Contains("bad magic"));
  CHECK_THROWS_WITH(decode_header(header_of(std::string("MTR1\0\0\0\0", 8)), 1024), Contains("empty"));
  CHECK_THROWS_WITH(decode_header(header_of(std::string("MTR1\0\1\0\1", 8)), 65536), Contains("65537 bytes is over"));
  CHECK(decode_header(header_of(std::string("MTR1\0\1\0\0", 8)), 65536) == 65536);

  CHECK_THROWS_WITH(decode_payload("not json"), Contains("not valid JSON"));
  CHECK_THROWS_WITH(decode_payload("[1,2]"), Contains("not a JSON object"));
  CHECK_THROWS_WITH(decode_payload("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}"),
                    Contains("nested too deeply"));
  CHECK(decode_payload("{\"a\":\"[[[[[[[[[[[[[[[[[[\"}")["a"].get<std::string>().size() == 18);  // brackets in strings are text
}

TEST_CASE("tokens are long, random and compared exactly", "[rendezvous][token]") {
  std::set<std::string> seen;
  for (int i = 0; i < 50; ++i) {
    std::string t = generate_token();
    REQUIRE(t.size() == 64);
    REQUIRE(t.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(t);
  }
  CHECK(seen.size() == 50);
  CHECK(tokens_equal("abc", "abc"));
  CHECK_FALSE(tokens_equal("abc", "abd"));
  CHECK_FALSE(tokens_equal("abc", "abcd"));
  CHECK_FALSE(tokens_equal("", "a"));
  CHECK(token_or_generate(nullptr).size() == 64);
  CHECK(token_or_generate("").size() == 64);
  CHECK(token_or_generate("a-long-enough-secret") == "a-long-enough-secret");
  CHECK_THROWS_WITH(token_or_generate("short"), Contains("MTRAIN_RDZV_TOKEN is only 5 characters"));
  CHECK_THROWS_WITH(token_or_generate("has a space in it!"), Contains("spaces"));
}

TEST_CASE("endpoints: host:port, IPv6 in brackets, default port, errors with columns", "[rendezvous][endpoint]") {
  auto e = parse_endpoint("worker-0:29401");
  CHECK(e.host == "worker-0");
  CHECK(e.port == 29401);
  CHECK(parse_endpoint("10.0.0.1").port == kDefaultRdzvPort);
  e = parse_endpoint("[::1]:5000");
  CHECK(e.host == "::1");
  CHECK(e.str() == "[::1]:5000");
  CHECK(parse_endpoint("h:0", "x", true).port == 0);
  CHECK_THROWS_WITH(parse_endpoint("h:0"), Contains("column 3") && Contains("'0' is not a port"));
  CHECK_THROWS_WITH(parse_endpoint("h:99999"), Contains("column 3"));
  CHECK_THROWS_WITH(parse_endpoint("h:"), Contains("missing port"));
  CHECK_THROWS_WITH(parse_endpoint(":80"), Contains("missing host"));
  CHECK_THROWS_WITH(parse_endpoint("::1:80"), Contains("needs brackets"));
  CHECK_THROWS_WITH(parse_endpoint("a b:80"), Contains("column 2"));
  CHECK_THROWS_WITH(parse_endpoint(""), Contains("empty"));
}

TEST_CASE("nnodes flag: N or MIN:MAX", "[rendezvous][endpoint]") {
  auto n = parse_nnodes("2");
  CHECK((n.min == 2 && n.max == 2 && !n.elastic()));
  n = parse_nnodes("2:4");
  CHECK((n.min == 2 && n.max == 4 && n.elastic()));
  CHECK_THROWS_WITH(parse_nnodes("4:2"), Contains("MIN 4 is larger than MAX 2"));
  CHECK_THROWS_WITH(parse_nnodes("0"), Contains("'0' is not a node count"));
  CHECK_THROWS_WITH(parse_nnodes("2:x"), Contains("column 3"));
  CHECK_THROWS_WITH(parse_nnodes(":3"), Contains("missing node count"));
}

TEST_CASE("assignment: contiguous ranks, master is node 0, JSON round trip", "[rendezvous][assignment]") {
  auto a = assign_ranks({{"a", "10.0.0.1", 0, 0, 3}, {"b", "", 0, 0, 1}, {"c", "c", 0, 0, 2}}, 29500, "r");
  CHECK(a.world_size == 6);
  CHECK(a.master_addr == "10.0.0.1");
  CHECK(a.nodes[2].node_rank == 2);
  CHECK(a.nodes[2].first_rank == 4);
  auto b = assignment_from_json(to_json(a));
  CHECK(to_json(b) == to_json(a));
  CHECK_THROWS_AS(assignment_from_json({{"nodes", 3}}), FrameError);
}

TEST_CASE("connection capacity: 2 per node plus headroom, within the descriptor limit", "[rendezvous][capacity]") {
  CHECK(wanted_connections(2) == 68);
  CHECK(wanted_connections(4096) == 8256);
  CHECK(connection_capacity(4096, 1 << 20) == 8256);
  CHECK(connection_capacity(4096, 1024) == 1024 - kReservedDescriptors);  // the limit binds
  CHECK(connection_capacity(512, 20000) == 1088);
  CHECK(connection_capacity(1, 10) == 1);
  CHECK(wanted_fd_limit(4096) == 8256 + kReservedDescriptors);
}

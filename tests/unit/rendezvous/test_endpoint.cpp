// The flag grammars of lib/rendezvous/endpoint.cpp: host:port endpoints and --nnodes N or MIN:MAX.
#include <catch2/catch.hpp>

#include <string>

#include "lib/core/error.hpp"
#include "lib/rendezvous/endpoint.hpp"

using namespace mtrain::rendezvous;
using Catch::Contains;

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

// The tracking server's URI: http only, host and port, a base path.
#include <catch2/catch.hpp>

#include "lib/mlflow/http_client.hpp"

using namespace mtrain::mlflow;

TEST_CASE("an http URI gives host, port and base path", "[mlflow][http_client]") {
  HttpUrl u;
  REQUIRE(parse_http_url("http://127.0.0.1:5000", u).empty());
  CHECK(u.host == "127.0.0.1");
  CHECK(u.port == "5000");
  CHECK(u.base_path.empty());
  REQUIRE(parse_http_url("http://tracking.example/mlflow/", u).empty());
  CHECK(u.host == "tracking.example");
  CHECK(u.port == "80");
  CHECK(u.base_path == "/mlflow");
  REQUIRE(parse_http_url("http://[::1]:8080/", u).empty());
  CHECK(u.host == "::1");
  CHECK(u.port == "8080");
  CHECK_THAT(parse_http_url("https://x", u), Catch::Contains("https is not supported"));
  CHECK_THAT(parse_http_url("file:///tmp/mlruns", u), Catch::Contains("not an http:// URI"));
  CHECK_THAT(parse_http_url("http://:5000", u), Catch::Contains("no host"));
  CHECK_THAT(parse_http_url("http://h:0", u), Catch::Contains("port"));
  CHECK_THAT(parse_http_url("http://h:99999", u), Catch::Contains("port"));
  CHECK_THAT(parse_http_url("http://h:x", u), Catch::Contains("port"));
  CHECK_THAT(parse_http_url("http://user:pw@h", u), Catch::Contains("credentials"));
}

// Frames of the rendezvous protocol (lib/rendezvous/frame.cpp): magic, size and nesting enforced.
#include <catch2/catch.hpp>

#include <array>
#include <string>

#include "lib/core/error.hpp"
#include "lib/rendezvous/frame.hpp"

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

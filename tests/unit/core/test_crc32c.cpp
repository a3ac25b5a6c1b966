// CRC-32C: the standard check value, the portable path equal to the SSE4.2 one, streaming.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "lib/core/crc32c.hpp"

using namespace mtrain;

TEST_CASE("CRC-32C matches the standard check value and its portable path", "[core][crc32c]") {
  CHECK(crc32c_update(0, "123456789", 9) == 0xE3069283u);
  CHECK(crc32c_update_portable(0, "123456789", 9) == 0xE3069283u);
  std::mt19937 gen(7);
  std::vector<unsigned char> buf(100003);
  for (auto& b : buf) b = static_cast<unsigned char>(gen());
  const uint32_t whole = crc32c_update(0, buf.data(), buf.size());
  CHECK(crc32c_update_portable(0, buf.data(), buf.size()) == whole);
  // Streaming in uneven chunks gives the same value.
  uint32_t c = 0;
  size_t at = 0;
  for (size_t step : {1u, 7u, 4096u, 13u, 99999u}) {
    const size_t n = std::min(step, buf.size() - at);
    c = crc32c_update(c, buf.data() + at, n);
    at += n;
  }
  c = crc32c_update(c, buf.data() + at, buf.size() - at);
  CHECK(c == whole);
  buf[5000] ^= 1;
  CHECK(crc32c_update(0, buf.data(), buf.size()) != whole);
  CHECK(crc32c_text(0xE3069283u) == "crc32c:e3069283");
}

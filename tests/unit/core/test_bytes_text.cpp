// The one byte formatter: units, the fixed and the adaptive number of decimals.
#include <catch2/catch.hpp>

#include "lib/core/bytes_text.hpp"

using mtrain::human_bytes;

TEST_CASE("human_bytes: binary units, whole bytes, fixed or three significant digits", "[bytes_text]") {
  CHECK(human_bytes(0) == "0 B");
  CHECK(human_bytes(812) == "812 B");
  CHECK(human_bytes(1023) == "1023 B");
  CHECK(human_bytes(1024) == "1.00 KiB");
  CHECK(human_bytes(38.19 * 1048576, 2) == "38.19 MiB");  // the memory ledger's table
  CHECK(human_bytes(64.0 * 1048576, 1) == "64.0 MiB");  // mtrain env
  CHECK(human_bytes(80.0 * 1073741824) == "80.0 GiB");  // adaptive: one decimal from 10 up
  CHECK(human_bytes(7.5 * 1073741824) == "7.50 GiB");  // two below 10
  CHECK(human_bytes(3.0 * 1125899906842624.0) == "3.00 PiB");
  CHECK(human_bytes(-2048) == "-2.00 KiB");  // a difference of sizes keeps its sign
}

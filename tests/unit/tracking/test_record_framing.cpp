// TFRecord framing as TensorBoard reads it: the masked CRC-32C (values from TensorBoard's own
// masked_crc32c), the header layout, and a reader that refuses any damaged or cut record.
#include <catch2/catch.hpp>

#include <string>

#include "lib/tracking/record_framing.hpp"

using namespace mtrain::tracking;

TEST_CASE("masked CRC-32C is TensorBoard's", "[tracking][record_framing]") {
  // tensorboard.compat.tensorflow_stub.pywrap_tensorflow.masked_crc32c (tensorboard 2.21.0)
  CHECK(masked_crc32c("") == 0xa282ead8u);
  CHECK(masked_crc32c("mtrain") == 0xd2547cbeu);
  CHECK(masked_crc32c(std::string("\x06\0\0\0\0\0\0\0", 8)) == 0x37d56973u);
}

TEST_CASE("a record is length, its CRC, data, the data's CRC", "[tracking][record_framing]") {
  const std::string r = frame_record("mtrain");
  REQUIRE(r.size() == 6 + 16);
  CHECK(r.substr(0, 8) == std::string("\x06\0\0\0\0\0\0\0", 8));  // little-endian uint64
  CHECK(r.substr(8, 4) == std::string("\x73\x69\xd5\x37", 4));
  CHECK(r.substr(12, 6) == "mtrain");
  CHECK(r.substr(18, 4) == std::string("\xbe\x7c\x54\xd2", 4));
}

TEST_CASE("records read back, a flipped bit or a cut end is refused", "[tracking][record_framing]") {
  const std::string file = frame_record("first") + frame_record("") + frame_record(std::string(1000, 'x'));
  const auto back = read_records(file);
  REQUIRE(back);
  REQUIRE(back->size() == 3);
  CHECK((*back)[0] == "first");
  CHECK((*back)[1].empty());
  CHECK((*back)[2] == std::string(1000, 'x'));
  for (size_t at : {size_t{0}, size_t{9}, size_t{14}, size_t{19}, file.size() - 1}) {
    std::string bad = file;
    bad[at] = static_cast<char>(bad[at] ^ 0x10);
    INFO("byte " << at);
    CHECK_FALSE(read_records(bad));
  }
  CHECK_FALSE(read_records(file.substr(0, file.size() - 1)));
  CHECK_FALSE(read_records(file, /*max_record=*/999));
  CHECK(read_records("")->empty());
}

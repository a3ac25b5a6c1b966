// A .safetensors file (issue 29): the 8-byte length, the JSON header through the streaming
// parser, checked against the bytes after it — what SafetensorsReader does before any tensor
// read. A header that parses must describe ranges that tile the data exactly.
#include <algorithm>

#include "fuzz_common.hpp"
#include "lib/trainer/checkpoint/safetensors_header.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  if (size < 8) return 0;
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (n > size - 8) return 0;  // the reader refuses this before parsing
  const std::string header(reinterpret_cast<const char*>(data + 8), n);
  const uint64_t data_bytes = size - 8 - n;
  fuzz::accepts([&] {
    const auto h = trainer::parse_safetensors_header(header, data_bytes, "x.safetensors");
    uint64_t total = 0;
    for (const auto& t : h.tensors) {
      FUZZ_CHECK(t.begin <= t.end && t.end <= data_bytes);
      FUZZ_CHECK(trainer::safetensors_item_size(t.dtype) > 0);
      FUZZ_CHECK(t.shape.size() <= 64);
      total += t.end - t.begin;
    }
    FUZZ_CHECK(total == data_bytes);
  });
  return 0;
}

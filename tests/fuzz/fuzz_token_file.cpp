// A token file's header (issue 29): the first 8 bytes are the file's size (little-endian; the
// fuzzer picks any), the rest its first bytes. A layout that is accepted must account for exactly
// the file's bytes, so no rank maps or reads past the end.
#include <algorithm>

#include "fuzz_common.hpp"
#include "lib/core/token_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  if (size < 8) return 0;
  uint64_t file_size = 0;
  for (int i = 0; i < 8; ++i) file_size |= static_cast<uint64_t>(data[i]) << (8 * i);
  const unsigned char* head = data + 8;
  const size_t head_len = std::min<size_t>(size - 8, static_cast<size_t>(std::min<uint64_t>(file_size, 1024)));
  fuzz::accepts([&] {
    const TokenFileLayout l = token_file_layout("t.bin", "data.path", head, head_len, file_size);
    FUZZ_CHECK(l.count >= 0);
    FUZZ_CHECK(static_cast<uint64_t>(l.header_bytes) + static_cast<uint64_t>(l.count) * static_cast<uint64_t>(l.token_bytes) == file_size);
    FUZZ_CHECK(!l.describe().empty());
  });
  return 0;
}

#pragma once
// Tokenized corpora as bytes, in the layouts lib/core/token_file.hpp tells apart: nanoGPT's raw
// uint16 ids and llm.c's 1024-byte header followed by uint16 or uint32 ids. Shared by the
// token-file tests (tests/unit/core) and the tokens dataset's (tests/unit/trainer/data).
#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/token_file.hpp"

namespace mtrain::testing {

inline void append_le(std::string& out, uint64_t v, int bytes) {
  for (int b = 0; b < bytes; ++b) out.push_back(static_cast<char>((v >> (8 * b)) & 0xFF));
}

// nanoGPT: the ids as uint16, nothing else.
inline std::string nanogpt_bytes(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) append_le(out, id, 2);
  return out;
}

// llm.c: 256 int32 of header (magic, version, count, zeros), then the ids.
inline std::string llmc_bytes(const std::vector<uint32_t>& ids, int token_bytes, int64_t count_in_header) {
  std::string out;
  append_le(out, token_bytes == 2 ? kLlmcMagicU16 : kLlmcMagicU32, 4);
  append_le(out, token_bytes == 2 ? 1 : 7, 4);
  append_le(out, static_cast<uint64_t>(count_in_header), 4);
  out.resize(1024, '\0');
  for (uint32_t id : ids) append_le(out, id, token_bytes);
  return out;
}
inline std::string llmc_bytes(const std::vector<uint32_t>& ids, int token_bytes) {
  return llmc_bytes(ids, token_bytes, static_cast<int64_t>(ids.size()));
}

// n ids, (7i + 3) mod `modulo`.
inline std::vector<uint32_t> ramp(int64_t n, uint32_t modulo) {
  std::vector<uint32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) ids[static_cast<size_t>(i)] = static_cast<uint32_t>((i * 7 + 3) % modulo);
  return ids;
}

}  // namespace mtrain::testing

#pragma once
// The on-disk layouts of tokenized corpora that the `tokens` dataset reads, told apart by their
// first bytes. Torch-free, so that the launcher checks a file before any rank starts and every
// rank maps it by the same rule:
//
//   nanoGPT   raw little-endian uint16 token ids, no header (prepare.py's train.bin / val.bin)
//   llm.c     a 1024-byte header of 256 little-endian int32 — [0] magic, [1] version, [2] token
//             count — then the tokens: magic 20240520 version 1 = uint16 ids (dev/data/*.bin),
//             magic 20240801 version 7 = uint32 ids (vocabularies above 65536)
//
// A file of at least 1024 bytes whose first int32 is one of llm.c's magics is read as llm.c (a raw
// uint16 file would have to start with token ids 55432, 308 or 55713, 308 to be mistaken: beyond
// GPT-2's 50257 ids); its size must then be exactly 1024 + count × token bytes.
#include <cstddef>
#include <cstdint>
#include <string>

namespace mtrain {

struct TokenFileLayout {
  bool llmc = false;          // false: nanoGPT raw
  int64_t header_bytes = 0;   // 0 or 1024
  int token_bytes = 2;        // 2 (uint16) or 4 (uint32)
  int64_t count = 0;          // tokens after the header
  // "llm.c uint32, magic 20240801 version 7" / "nanoGPT raw uint16".
  std::string describe() const;
};

inline constexpr int64_t kLlmcHeaderBytes = 1024;
inline constexpr uint32_t kLlmcMagicU16 = 20240520;  // version 1
inline constexpr uint32_t kLlmcMagicU32 = 20240801;  // version 7

// The layout from the file's first min(1024, size) bytes and its size. Throws mtrain::Error
// (exit 2) naming `path` and `setting` for a size that disagrees with the header, an llm.c magic
// with an unknown version, or a raw file of an odd number of bytes.
TokenFileLayout token_file_layout(const std::string& path, const std::string& setting,
                                  const unsigned char* head, size_t head_len, uint64_t file_size);

// Reads the first 1024 bytes of `path` and its size, then token_file_layout. Also throws for a
// missing or unreadable file or a folder, naming the setting.
TokenFileLayout read_token_file_layout(const std::string& path, const std::string& setting);

}  // namespace mtrain

#include "lib/core/token_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/untrusted_file.hpp"

namespace mtrain {

namespace {

uint32_t le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

std::string TokenFileLayout::describe() const {
  if (!llmc) return "nanoGPT raw uint16";
  return token_bytes == 2 ? fmt::format("llm.c uint16, magic {} version 1", kLlmcMagicU16)
                          : fmt::format("llm.c uint32, magic {} version 7", kLlmcMagicU32);
}

TokenFileLayout token_file_layout(const std::string& path, const std::string& setting,
                                  const unsigned char* head, size_t head_len, uint64_t file_size) {
  TokenFileLayout l;
  const uint32_t magic = head_len >= 4 ? le32(head) : 0;
  if (file_size >= static_cast<uint64_t>(kLlmcHeaderBytes) &&
      head_len >= static_cast<size_t>(kLlmcHeaderBytes) &&
      (magic == kLlmcMagicU16 || magic == kLlmcMagicU32)) {
    const uint32_t version = le32(head + 4);
    const uint32_t expected_version = magic == kLlmcMagicU16 ? 1 : 7;
    if (version != expected_version)
      throw Error(fmt::format("token file '{}' starts with llm.c's magic {} but has version {} "
                              "(magic {} goes with version {})",
                              path, magic, version, magic, expected_version),
                  fmt::format("llm.c token files are magic {} version 1 (uint16 ids) or magic {} "
                              "version 7 (uint32 ids); rewrite the file with one of them",
                              kLlmcMagicU16, kLlmcMagicU32))
          .at(setting);
    l.llmc = true;
    l.header_bytes = kLlmcHeaderBytes;
    l.token_bytes = magic == kLlmcMagicU16 ? 2 : 4;
    l.count = le32(head + 8);
    const uint64_t expected =
        static_cast<uint64_t>(kLlmcHeaderBytes) + static_cast<uint64_t>(l.count) * l.token_bytes;
    if (file_size != expected)
      throw Error(fmt::format("token file '{}' ({}) has {} bytes, but its header says {} tokens: "
                              "expected 1024 + {} × {} = {} bytes",
                              path, l.describe(), file_size, l.count, l.count, l.token_bytes,
                              expected),
                  file_size < expected
                      ? "the file is truncated (copied or written only in part): write it again"
                      : "the header's token count (int32 [2]) is stale: write the file again")
          .at(setting);
    return l;
  }
  if (file_size % 2 != 0)
    throw Error(fmt::format("token file '{}' has {} bytes, an odd number: not nanoGPT's raw "
                            "uint16 tokens, and it has no llm.c header (magic {} or {})",
                            path, file_size, kLlmcMagicU16, kLlmcMagicU32),
                "write the token ids as uint16 (np.array(ids, dtype=np.uint16).tofile(path)), or "
                "as llm.c's format with its 1024-byte header; see docs/your-model.md")
        .at(setting);
  l.count = static_cast<int64_t>(file_size / 2);
  return l;
}

TokenFileLayout read_token_file_layout(const std::string& path, const std::string& setting) {
  if (path.empty())
    throw Error("the tokens dataset needs a token file, but no path is set",
                fmt::format("set {} to a nanoGPT .bin (raw uint16) or an llm.c .bin file", setting))
        .at(setting);
  // open_untrusted: a FIFO or a device named as the data path must be refused, not opened
  // blocking (the launcher hung forever in open() on a FIFO) and not called "missing".
  std::string why;
  const UntrustedFile f = open_untrusted(path, &why);
  if (f.fd() < 0)
    throw Error(fmt::format("token file '{}' {}", path, why),
                fmt::format("{} names one .bin file of token ids (a folder of shards, a pipe or a "
                            "device is not read); relative paths are from the directory mtrain "
                            "runs in", setting))
        .at(setting);
  unsigned char head[kLlmcHeaderBytes];
  const auto size = f.size();
  const uint64_t got = std::min<uint64_t>(size, kLlmcHeaderBytes);
  if (!f.pread_exact(head, got, 0))
    throw Error(fmt::format("cannot read token file '{}': {}", path,
                            errno != 0 ? std::strerror(errno) : "it shrank while read"))
        .at(setting);
  return token_file_layout(path, setting, head, static_cast<size_t>(got), size);
}

}  // namespace mtrain

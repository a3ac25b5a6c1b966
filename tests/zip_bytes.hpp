#pragma once
// Zip files as bytes, laid out the way PyTorch writes them (stored records, a central directory,
// an end record), for the readers of lib/core/zip_index.hpp and the TorchScript archive tests.
// `method` and the sizes can be set to lie, as a hostile file would.
#include <cstdint>
#include <string>
#include <vector>

#include "token_bytes.hpp"

namespace mtrain::testing {

struct ZipRecord {
  std::string name;
  std::string data;
  uint16_t method = 0;                 // what the directory claims
  int64_t declared_size = -1;          // -1: the real size
  int64_t compressed_size = -1;        // -1: the declared size
};

inline std::string zip_bytes(const std::vector<ZipRecord>& records) {
  std::string out, dir;
  for (const auto& r : records) {
    const uint64_t offset = out.size();
    const uint64_t size = r.declared_size >= 0 ? static_cast<uint64_t>(r.declared_size) : r.data.size();
    const uint64_t csize = r.compressed_size >= 0 ? static_cast<uint64_t>(r.compressed_size) : size;
    auto header = [&](std::string& s, bool central) {
      append_le(s, central ? 0x02014b50 : 0x04034b50, 4);
      if (central) append_le(s, 20, 2);  // made by
      append_le(s, 20, 2);               // needed
      append_le(s, 0, 2);                // flags
      append_le(s, r.method, 2);
      append_le(s, 0, 4);                // time, date
      append_le(s, 0, 4);                // crc (not checked by the readers under test)
      append_le(s, csize, 4);
      append_le(s, size, 4);
      append_le(s, r.name.size(), 2);
      append_le(s, 0, 2);                // extra
      if (central) {
        append_le(s, 0, 2);  // comment
        append_le(s, 0, 2);  // disk
        append_le(s, 0, 2);  // internal attributes
        append_le(s, 0, 4);  // external attributes
        append_le(s, offset, 4);
      }
      s += r.name;
    };
    header(out, false);
    out += r.data;
    header(dir, true);
  }
  const uint64_t dir_offset = out.size();
  out += dir;
  append_le(out, 0x06054b50, 4);
  append_le(out, 0, 4);
  append_le(out, records.size(), 2);
  append_le(out, records.size(), 2);
  append_le(out, dir.size(), 4);
  append_le(out, dir_offset, 4);
  append_le(out, 0, 2);
  return out;
}

}  // namespace mtrain::testing

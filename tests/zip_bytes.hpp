#pragma once
// Zip files as bytes, laid out the way PyTorch writes them (records, a central directory, an end
// record), for the tests of lib/core/zip_reader.hpp and its users (TorchScript archives, the
// hostile torch.save files of issue 29). `method`, the sizes and the CRC can be set to lie, as a
// hostile file would; deflated() makes a record really deflated.
#include <cstdint>
#include <string>
#include <vector>

#include <zlib.h>

#include "lib/core/zip_reader.hpp"
#include "token_bytes.hpp"

namespace mtrain::testing {

struct ZipRecord {
  std::string name;
  std::string data;                    // the bytes in the file
  uint16_t method = 0;                 // what the directory claims
  int64_t declared_size = -1;          // the uncompressed size written; -1: data's size
  int64_t compressed_size = -1;        // -1: data's size
  int64_t crc = -1;                    // -1: the CRC-32 of data
};

// `text` raw-deflated (no zlib header, as zip stores it), declared at its size with its CRC.
inline ZipRecord deflated(const std::string& name, const std::string& text) {
  std::string out(compressBound(static_cast<uLong>(text.size())) + 16, '\0');
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return {name, out, 8, static_cast<int64_t>(text.size()), -1, zip_crc32(0, text.data(), text.size())};
}

// A local (central = false) or central-directory header of a record, as zip_bytes lays them out.
inline void append_zip_header(std::string& s, bool central, const std::string& name, uint16_t method, uint64_t crc,
                              uint64_t csize, uint64_t size, uint64_t offset, const std::string& extra = "") {
  append_le(s, central ? 0x02014b50 : 0x04034b50, 4);
  if (central) append_le(s, 20, 2);  // made by
  append_le(s, 20, 2);               // needed
  append_le(s, 0, 2);                // flags
  append_le(s, method, 2);
  append_le(s, 0, 4);                // time, date
  append_le(s, crc, 4);
  append_le(s, csize, 4);
  append_le(s, size, 4);
  append_le(s, name.size(), 2);
  append_le(s, extra.size(), 2);
  if (central) {
    append_le(s, 0, 2);  // comment
    append_le(s, 0, 2);  // disk
    append_le(s, 0, 2);  // internal attributes
    append_le(s, 0, 4);  // external attributes
    append_le(s, offset, 4);
  }
  s += name + extra;
}

// The end of central directory record after a directory that starts at `dir_offset` and ends
// where `out` ends; with `zip64`, preceded by the zip64 end record and its locator (the plain
// record's counts and offsets then say 0xffff…, as PyTorch writes archives of over 65535 records).
inline void append_end_records(std::string& out, uint64_t dir_offset, uint64_t entries, bool zip64) {
  const uint64_t dir_end = out.size();
  if (!zip64) {
    append_le(out, 0x06054b50, 4);
    append_le(out, 0, 4);
    append_le(out, entries, 2);
    append_le(out, entries, 2);
    append_le(out, dir_end - dir_offset, 4);
    append_le(out, dir_offset, 4);
    append_le(out, 0, 2);
    return;
  }
  append_le(out, 0x06064b50, 4);  // zip64 end of central directory
  append_le(out, 44, 8);
  append_le(out, 45, 2);
  append_le(out, 45, 2);
  append_le(out, 0, 4);
  append_le(out, 0, 4);
  append_le(out, entries, 8);
  append_le(out, entries, 8);
  append_le(out, dir_end - dir_offset, 8);
  append_le(out, dir_offset, 8);
  append_le(out, 0x07064b50, 4);  // its locator
  append_le(out, 0, 4);
  append_le(out, dir_end, 8);
  append_le(out, 1, 4);
  append_le(out, 0x06054b50, 4);
  append_le(out, 0, 4);
  append_le(out, 0xffff, 2);
  append_le(out, 0xffff, 2);
  append_le(out, 0xffffffff, 4);
  append_le(out, 0xffffffff, 4);
  append_le(out, 0, 2);
}

// With `align`, each record's data starts at a multiple of it, padded by an extra field in its
// local header ("FB", then 'Z's), as PyTorch's writer aligns records to 64 bytes.
// With `zip64`, zip64 end records even for 65535 records or fewer.
inline std::string zip_bytes(const std::vector<ZipRecord>& records, uint64_t align = 0, bool zip64 = false) {
  std::string out, dir;
  for (const auto& r : records) {
    const uint64_t offset = out.size();
    const uint64_t size = r.declared_size >= 0 ? static_cast<uint64_t>(r.declared_size) : r.data.size();
    const uint64_t csize = r.compressed_size >= 0 ? static_cast<uint64_t>(r.compressed_size) : r.data.size();
    const uint64_t crc = r.crc >= 0 ? static_cast<uint64_t>(r.crc) : zip_crc32(0, r.data.data(), r.data.size());
    std::string extra;
    if (align > 0) {
      const uint64_t pad = (align - (offset + 30 + r.name.size() + 4) % align) % align;
      extra = "FB";
      append_le(extra, pad, 2);
      extra += std::string(pad, 'Z');
    }
    append_zip_header(out, false, r.name, r.method, crc, csize, size, offset, extra);
    out += r.data;
    append_zip_header(dir, true, r.name, r.method, crc, csize, size, offset);
  }
  const uint64_t dir_offset = out.size();
  out += dir;
  append_end_records(out, dir_offset, records.size(), zip64 || records.size() > 0xffff);
  return out;
}

// `records`, then `extra` more records named `<extra_prefix><i>`, stored and empty: a zip that is
// nearly all headers (46 + 30 + two copies of the name per entry, the most index per byte of file
// an archive whose records own their bytes can ask for), closed by zip64 end records since it
// may hold more than 65535 entries.
inline std::string directory_heavy_zip(std::vector<ZipRecord> records, uint64_t extra, const std::string& extra_prefix) {
  records.reserve(records.size() + extra);
  for (uint64_t i = 0; i < extra; ++i) records.push_back({extra_prefix + std::to_string(i), ""});
  return zip_bytes(records, 0, /*zip64=*/true);
}

}  // namespace mtrain::testing

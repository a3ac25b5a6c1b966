#include "mtrain/trainer/checkpoint/zip_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::trainer {

namespace {

constexpr uint32_t kEocd = 0x06054b50, kZip64Locator = 0x07064b50, kZip64Eocd = 0x06064b50;
constexpr uint32_t kCentral = 0x02014b50, kLocal = 0x04034b50;
constexpr uint64_t kCentralBytes = 46, kLocalBytes = 30, kEocdBytes = 22;

uint64_t le(const unsigned char* p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

const char* method_name(unsigned m) {
  switch (m) {
    case 8: return "deflate";
    case 9: return "deflate64";
    case 12: return "bzip2";
    case 14: return "lzma";
    case 93: return "zstd";
    case 95: return "xz";
    default: return "an unknown method";
  }
}

}  // namespace

uint32_t zip_crc32(uint32_t crc, const void* data, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

ZipReader::ZipReader(std::string path) : path_(std::move(path)) {
  std::string why;
  file_ = open_untrusted(path_, &why);
  if (file_.fd() < 0) {
    throw Error(fmt::format("{}: the torch.save file {}", path_, why),
                "name a regular file written by torch.save (or a checkpoint folder)");
  }
  size_ = file_.size();
  index();
}

ZipReader::ZipReader(std::string path, std::string bytes)
    : path_(std::move(path)), memory_(std::move(bytes)), in_memory_(true) {
  size_ = memory_.size();
  index();
}

void ZipReader::fail(const std::string& what) const {
  throw Error(fmt::format("{}: not a valid torch.save zip archive: {}", path_, what),
              "the file is damaged, or it was re-packed by another zip tool; save it again with "
              "torch.save(obj, path) (torch.save stores records uncompressed)");
}

bool ZipReader::pread(void* buf, uint64_t n, uint64_t off) const {
  if (off > size_ || n > size_ - off) return false;
  if (in_memory_) {
    std::memcpy(buf, memory_.data() + off, n);
    return true;
  }
  return file_.pread_exact(buf, n, off);
}

void ZipReader::index() {
  if (size_ < kEocdBytes) fail(fmt::format("{} bytes is too short for a zip archive", size_));
  // The end record: within the last 22 + 65535 (comment) bytes, searched backwards.
  const uint64_t tail_len = std::min<uint64_t>(size_, kEocdBytes + 0xffff);
  std::vector<unsigned char> tail(tail_len);
  if (!pread(tail.data(), tail_len, size_ - tail_len)) fail("cannot read the end of the file");
  int64_t at = -1;
  for (int64_t i = static_cast<int64_t>(tail_len - kEocdBytes); i >= 0; --i) {
    if (le(&tail[i], 4) == kEocd) {
      at = i;
      break;
    }
  }
  if (at < 0) fail("no end-of-central-directory record (truncated, or not a zip file)");
  const unsigned char* e = &tail[static_cast<size_t>(at)];
  const uint64_t eocd_pos = size_ - tail_len + static_cast<uint64_t>(at);
  uint64_t entries = le(e + 10, 2), cd_size = le(e + 12, 4), cd_off = le(e + 16, 4);
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0) fail("a multi-disk (split) archive");
  uint64_t cd_end_limit = eocd_pos;
  if (entries == 0xffff || cd_size == 0xffffffff || cd_off == 0xffffffff) {
    unsigned char loc[20];
    if (eocd_pos < 20 || !pread(loc, 20, eocd_pos - 20) || le(loc, 4) != kZip64Locator) {
      fail("the end record points to a zip64 record that is missing");
    }
    const uint64_t z = le(loc + 8, 8);
    unsigned char r[56];
    if (z > eocd_pos - 20 || !pread(r, 56, z) || le(r, 4) != kZip64Eocd) {
      fail(fmt::format("the zip64 end record at byte {} is missing or outside the file", z));
    }
    entries = le(r + 32, 8);
    cd_size = le(r + 40, 8);
    cd_off = le(r + 48, 8);
    cd_end_limit = z;
  }
  if (cd_off > cd_end_limit || cd_size > cd_end_limit - cd_off) {
    fail(fmt::format("the central directory [{}, +{}) lies outside the file ({} bytes)", cd_off, cd_size, size_));
  }
  if (entries > cd_size / kCentralBytes) {
    fail(fmt::format("{} entries cannot fit in a central directory of {} bytes", entries, cd_size));
  }
  cd_offset_ = cd_off;
  std::vector<unsigned char> cd(cd_size);
  if (cd_size > 0 && !pread(cd.data(), cd_size, cd_off)) fail("cannot read the central directory");
  records_.reserve(entries);
  uint64_t p = 0;
  for (uint64_t i = 0; i < entries; ++i) {
    if (cd_size - p < kCentralBytes || le(&cd[p], 4) != kCentral) {
      fail(fmt::format("central directory entry {} is damaged", i));
    }
    const unsigned char* c = &cd[p];
    const unsigned flags = static_cast<unsigned>(le(c + 8, 2));
    ZipRecord r;
    r.method = static_cast<uint16_t>(le(c + 10, 2));
    r.crc32 = static_cast<uint32_t>(le(c + 16, 4));
    uint64_t csize = le(c + 20, 4), usize = le(c + 24, 4), off = le(c + 42, 4);
    const uint64_t n = le(c + 28, 2), m = le(c + 30, 2), k = le(c + 32, 2);
    if (cd_size - p - kCentralBytes < n + m + k) fail(fmt::format("central directory entry {} runs past its end", i));
    std::string name(reinterpret_cast<const char*>(c + kCentralBytes), n);
    // zip64 sizes and offset, in that order, for each field saturated at 0xffffffff.
    const unsigned char* x = c + kCentralBytes + n;
    for (uint64_t q = 0; q + 4 <= m;) {
      const uint64_t id = le(x + q, 2), len = le(x + q + 2, 2);
      if (q + 4 + len > m) fail(fmt::format("record {}: a damaged extra field", name));
      if (id == 1) {
        uint64_t f = q + 4;
        auto take = [&](uint64_t& v) {
          if (v != 0xffffffff) return;
          if (f + 8 > q + 4 + len) fail(fmt::format("record {}: a short zip64 extra field", name));
          v = le(x + f, 8);
          f += 8;
        };
        take(usize);
        take(csize);
        take(off);
      }
      q += 4 + len;
    }
    p += kCentralBytes + n + m + k;
    if (flags & 1) fail(fmt::format("record {} is encrypted", name));
    if (r.method != 0) {
      fail(fmt::format("record {} is compressed ({}, method {}); torch.save stores every record "
                       "uncompressed and mtrain reads only such records", name, method_name(r.method),
                       r.method));
    }
    if (csize != usize) fail(fmt::format("record {} is stored but its sizes differ ({} and {})", name, csize, usize));
    if (off > cd_off || usize > cd_off - off) {
      fail(fmt::format("record {} ([{}, +{}) bytes) does not lie before the central directory at {}",
                       name, off, usize, cd_off));
    }
    r.size = usize;
    r.header_offset = off;
    if (i == 0) {
      // torch.save: "<folder>/data.pkl", "<folder>/data/0", …: every record under one folder.
      const size_t slash = name.find('/');
      prefix_ = slash == std::string::npos ? "" : name.substr(0, slash + 1);
    }
    if (name.compare(0, prefix_.size(), prefix_) != 0) {
      fail(fmt::format("record {} is outside the archive's folder {}", name, prefix_));
    }
    r.name = name.substr(prefix_.size());
    if (!by_name_.emplace(r.name, records_.size()).second) fail(fmt::format("record {} appears twice", name));
    records_.push_back(std::move(r));
  }
}

const ZipRecord* ZipReader::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &records_[it->second];
}

ZipRecord& ZipReader::need(const std::string& name) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    throw Error(fmt::format("{}: the archive has no record {}{}", path_, prefix_, name),
                "the file is damaged or not a torch.save archive; save it again");
  }
  ZipRecord& r = records_[it->second];
  if (r.data_offset == 0) {
    unsigned char h[kLocalBytes];
    if (!pread(h, kLocalBytes, r.header_offset) || le(h, 4) != kLocal) {
      fail(fmt::format("record {}: no local header at byte {}", name, r.header_offset));
    }
    const uint64_t start = r.header_offset + kLocalBytes + le(h + 26, 2) + le(h + 28, 2);
    if (start > cd_offset_ || r.size > cd_offset_ - start) {
      fail(fmt::format("record {}: its {} bytes at byte {} run into the central directory (byte {})",
                       name, r.size, start, cd_offset_));
    }
    r.data_offset = start;
  }
  return r;
}

uint64_t ZipReader::data_offset(const std::string& name) { return need(name).data_offset; }

std::string ZipReader::read_all(const std::string& name, uint64_t limit) {
  ZipRecord& r = need(name);
  if (r.size > limit) {
    fail(fmt::format("record {} holds {} bytes, more than the {} this reader takes", name, r.size, limit));
  }
  std::string out(r.size, '\0');
  if (r.size > 0 && !pread(out.data(), r.size, r.data_offset)) fail(fmt::format("cannot read record {}", name));
  const uint32_t crc = zip_crc32(0, out.data(), out.size());
  if (crc != r.crc32) {
    fail(fmt::format("record {} fails its CRC-32 (recorded {:08x}, computed {:08x})", name, r.crc32, crc));
  }
  return out;
}

void ZipReader::read_range(const std::string& name, uint64_t offset, uint64_t n, void* out) {
  ZipRecord& r = need(name);
  if (offset > r.size || n > r.size - offset) {
    throw Error(fmt::format("{}: bytes [{}, {}) of record {}{} lie past its end ({} bytes): the "
                            "tensor's storage is declared larger than its record",
                            path_, offset, offset + n, prefix_, name, r.size),
                "the file is damaged or was edited; save it again with torch.save");
  }
  if (n > 0 && !pread(out, n, r.data_offset + offset)) {
    throw Error(fmt::format("{}: reading record {}{} failed ({})", path_, prefix_, name,
                            errno != 0 ? std::strerror(errno) : "the file shrank"),
                "the file changed or is damaged");
  }
}

}  // namespace mtrain::trainer

#include "lib/core/zip_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <zlib.h>

#include "lib/core/error.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain {

namespace {

constexpr uint32_t kEocd = 0x06054b50, kZip64Locator = 0x07064b50, kZip64Eocd = 0x06064b50;
constexpr uint32_t kCentral = 0x02014b50, kLocal = 0x04034b50;
constexpr uint64_t kCentralBytes = 46, kLocalBytes = 30, kEocdBytes = 22;
constexpr uint16_t kStored = 0, kDeflate = 8;

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

// inflateEnd on every way out of ZipReader::inflate.
struct InflateStream {
  z_stream z{};
  bool open = false;
  ~InflateStream() {
    if (open) inflateEnd(&z);
  }
};

}  // namespace

uint32_t zip_crc32(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (n > 0) {  // zlib takes 32-bit lengths
    const uInt k = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    c = ::crc32(c, p, k);
    p += k;
    n -= k;
  }
  return static_cast<uint32_t>(c);
}

ZipReader::ZipReader(std::string path, ZipFormat format) : path_(std::move(path)), format_(std::move(format)) {
  std::string why;
  file_ = open_untrusted(path_, &why);
  if (file_.fd() < 0) {
    throw Error(fmt::format("{}: the {} {}", path_, format_.what, why),
                fmt::format("name a regular file written by {}", format_.writer));
  }
  size_ = file_.size();
  index();
}

ZipReader::ZipReader(std::string path, std::string bytes, ZipFormat format)
    : path_(std::move(path)), format_(std::move(format)), memory_(std::move(bytes)), in_memory_(true) {
  size_ = memory_.size();
  index();
}

// `what` names records, whose names come from the file: made visible (no terminal escapes).
void ZipReader::fail(const std::string& what) const {
  throw Error(fmt::format("{}: the {} is not a valid zip archive: {}", path_, format_.what, visible_text(what)),
              fmt::format("the file is damaged (an interrupted download?), or it was re-packed by another zip "
                          "tool; write it again with {}", format_.writer));
}

bool ZipReader::pread(void* buf, uint64_t n, uint64_t off) const {
  if (off > size_ || n > size_ - off) return false;
  if (in_memory_) {
    std::memcpy(buf, memory_.data() + off, n);
    return true;
  }
  return file_.pread_exact(buf, n, off);
}

// The end record: within the last 22 + 65535 (comment) bytes, searched backwards; a zip64 end
// record when one of its fields is saturated.
ZipReader::Directory ZipReader::find_directory() {
  if (size_ < kEocdBytes) fail(fmt::format("{} bytes is too short for a zip archive", size_));
  const uint64_t tail_len = std::min<uint64_t>(size_, kEocdBytes + 0xffff);
  std::vector<unsigned char> tail(tail_len);
  if (!pread(tail.data(), tail_len, size_ - tail_len)) fail("cannot read the end of the file");
  int64_t at = -1;
  for (int64_t i = static_cast<int64_t>(tail_len - kEocdBytes); i >= 0 && at < 0; --i) {
    if (le(&tail[i], 4) == kEocd) at = i;
  }
  if (at < 0) fail("no end-of-central-directory record (truncated, or not a zip file)");
  const unsigned char* e = &tail[static_cast<size_t>(at)];
  const uint64_t eocd_pos = size_ - tail_len + static_cast<uint64_t>(at);
  if (le(e + 4, 2) != 0 || le(e + 6, 2) != 0) fail("a multi-disk (split) archive");
  Directory d{le(e + 10, 2), le(e + 16, 4), le(e + 12, 4), eocd_pos};
  if (d.entries == 0xffff || d.size == 0xffffffff || d.offset == 0xffffffff) d = read_zip64_end(eocd_pos);
  if (d.offset > d.end || d.size > d.end - d.offset) {
    fail(fmt::format("the central directory [{}, +{}) lies outside the file ({} bytes)", d.offset, d.size, size_));
  }
  if (d.entries > d.size / kCentralBytes) {
    fail(fmt::format("{} entries cannot fit in a central directory of {} bytes", d.entries, d.size));
  }
  return d;
}

ZipReader::Directory ZipReader::read_zip64_end(uint64_t eocd_pos) {
  unsigned char loc[20];
  if (eocd_pos < 20 || !pread(loc, 20, eocd_pos - 20) || le(loc, 4) != kZip64Locator) {
    fail("the end record points to a zip64 record that is missing");
  }
  const uint64_t z = le(loc + 8, 8);
  unsigned char r[56];
  if (z > eocd_pos - 20 || !pread(r, 56, z) || le(r, 4) != kZip64Eocd) {
    fail(fmt::format("the zip64 end record at byte {} is missing or outside the file", z));
  }
  return {le(r + 32, 8), le(r + 48, 8), le(r + 40, 8), z};
}

// The directory is parsed through a window of kWindow bytes (an entry is at most 46 + 3 x 65535),
// so indexing holds the records and their names, never a second copy of the directory.
constexpr uint64_t kWindow = 256u << 10;

void ZipReader::index() {
  const Directory d = find_directory();
  cd_offset_ = d.offset;
  cd_end_ = d.offset + d.size;
  if (d.entries > UINT32_MAX) fail(fmt::format("{} entries, more than any PyTorch file holds", d.entries));
  records_.reserve(d.entries);
  names_.reserve(d.size - d.entries * kCentralBytes);  // names are at most the rest of the directory
  uint64_t p = d.offset;
  for (uint64_t i = 0; i < d.entries; ++i) {
    const uint64_t room = cd_end_ - p;
    const unsigned char* c = directory_bytes(p, std::min(room, kCentralBytes));
    uint64_t len = kCentralBytes;
    if (room >= kCentralBytes) len += le(c + 28, 2) + le(c + 30, 2) + le(c + 32, 2);
    p += parse_entry(directory_bytes(p, std::min(room, len)), room, i);
  }
  window_ = {};
  sort_names();
  check_disjoint();
}

// `n` bytes of the central directory from file offset `at` (n <= kWindow, inside the directory).
const unsigned char* ZipReader::directory_bytes(uint64_t at, uint64_t n) {
  if (at < window_at_ || at + n > window_at_ + window_.size()) {
    window_.resize(std::min(kWindow, cd_end_ - at));
    window_at_ = at;
    if (!window_.empty() && !pread(window_.data(), window_.size(), at)) fail("cannot read the central directory");
  }
  return window_.data() + (at - window_at_);
}

// find()'s index, and the check that no name appears twice.
void ZipReader::sort_names() {
  sorted_.resize(records_.size());
  for (size_t i = 0; i < sorted_.size(); ++i) sorted_[i] = static_cast<uint32_t>(i);
  std::sort(sorted_.begin(), sorted_.end(),
            [&](uint32_t a, uint32_t b) { return name(records_[a]) < name(records_[b]); });
  for (size_t i = 1; i < sorted_.size(); ++i) {
    if (name(records_[sorted_[i - 1]]) == name(records_[sorted_[i]])) {
      fail(fmt::format("record {}{} appears twice", prefix_, name(records_[sorted_[i]])));
    }
  }
}

// Every entry owns its bytes: sorted by local header offset, each one's local header (30 bytes at
// least) and compressed data end before the next one's header starts. Entries that overlap, or
// share one record, would let a small file stand for any number of records: 2,000 directory
// entries pointing at one 64 KiB deflate record each inflated to 64 MiB (a 192 KB file kept the
// launcher busy past 120 s, issue 40 item 7). The exact end of each record, which needs its local
// header, is checked against the next entry's offset when the record is first read (need()).
void ZipReader::check_disjoint() {
  by_offset_.resize(records_.size());
  for (size_t i = 0; i < by_offset_.size(); ++i) by_offset_[i] = static_cast<uint32_t>(i);
  std::sort(by_offset_.begin(), by_offset_.end(),
            [&](uint32_t a, uint32_t b) { return records_[a].header_offset < records_[b].header_offset; });
  for (size_t i = 1; i < by_offset_.size(); ++i) {
    const ZipRecord& a = records_[by_offset_[i - 1]];
    const ZipRecord& b = records_[by_offset_[i]];
    if (b.header_offset - a.header_offset < kLocalBytes + a.compressed_size) {
      fail(fmt::format("records {} and {} {} (bytes [{}, +{}) and [{}, +{})): every record must have bytes of its own",
                       prefix_ + std::string(name(a)), prefix_ + std::string(name(b)),
                       a.header_offset == b.header_offset ? "point at the same data" : "overlap", a.header_offset,
                       kLocalBytes + a.compressed_size, b.header_offset, kLocalBytes + b.compressed_size));
    }
  }
}

// Where the record that starts at `header_offset` must end: the next record's local header, or the
// central directory.
uint64_t ZipReader::next_record_offset(uint64_t header_offset) const {
  const auto it = std::upper_bound(by_offset_.begin(), by_offset_.end(), header_offset,
                                   [&](uint64_t off, uint32_t i) { return off < records_[i].header_offset; });
  return it == by_offset_.end() ? cd_offset_ : records_[*it].header_offset;
}

// One central directory entry at `c` (`room` bytes left in the directory): checked and added.
// Returns its length.
uint64_t ZipReader::parse_entry(const unsigned char* c, uint64_t room, uint64_t i) {
  if (room < kCentralBytes || le(c, 4) != kCentral) fail(fmt::format("central directory entry {} is damaged", i));
  ZipRecord r;
  const unsigned flags = static_cast<unsigned>(le(c + 8, 2));
  r.method = static_cast<uint16_t>(le(c + 10, 2));
  r.crc32 = static_cast<uint32_t>(le(c + 16, 4));
  r.compressed_size = le(c + 20, 4);
  r.size = le(c + 24, 4);
  r.header_offset = le(c + 42, 4);
  const uint64_t n = le(c + 28, 2), m = le(c + 30, 2), k = le(c + 32, 2);
  if (room - kCentralBytes < n + m + k) fail(fmt::format("central directory entry {} runs past its end", i));
  const std::string_view name(reinterpret_cast<const char*>(c + kCentralBytes), n);
  read_zip64_extra(c + kCentralBytes + n, m, name, r);
  if (flags & 1) fail(fmt::format("record {} is encrypted", name));
  if (r.method == kStored && r.compressed_size != r.size) {
    fail(fmt::format("record {} is stored but its sizes differ ({} and {})", name, r.compressed_size, r.size));
  }
  if (r.header_offset > cd_offset_ || r.compressed_size > cd_offset_ - r.header_offset) {
    fail(fmt::format("record {} ([{}, +{}) bytes) does not lie before the central directory at {}", name,
                     r.header_offset, r.compressed_size, cd_offset_));
  }
  add_record(name, r, i);
  return kCentralBytes + n + m + k;
}

// zip64 sizes and offset, in that order, for each field saturated at 0xffffffff.
void ZipReader::read_zip64_extra(const unsigned char* x, uint64_t len, std::string_view name, ZipRecord& r) {
  for (uint64_t q = 0; q + 4 <= len;) {
    const uint64_t id = le(x + q, 2), n = le(x + q + 2, 2);
    if (q + 4 + n > len) fail(fmt::format("record {}: a damaged extra field", name));
    uint64_t f = q + 4;
    auto take = [&](uint64_t& v) {
      if (v != 0xffffffff) return;
      if (f + 8 > q + 4 + n) fail(fmt::format("record {}: a short zip64 extra field", name));
      v = le(x + f, 8);
      f += 8;
    };
    if (id == 1) {
      take(r.size);
      take(r.compressed_size);
      take(r.header_offset);
    }
    q += 4 + n;
  }
}

// PyTorch writes "<folder>/data.pkl", "<folder>/data/0", …: every record under the folder of the
// first (LibTorch's reader takes it from there too); records are named relative to it.
void ZipReader::add_record(std::string_view full_name, ZipRecord r, uint64_t i) {
  if (i == 0) {
    const size_t slash = full_name.find('/');
    prefix_ = slash == std::string::npos ? "" : std::string(full_name.substr(0, slash + 1));
  }
  if (full_name.compare(0, prefix_.size(), prefix_) != 0) {
    fail(fmt::format("record {} is outside the archive's folder {}", full_name, prefix_));
  }
  const std::string_view rel = full_name.substr(prefix_.size());
  r.name_offset = names_.size();
  r.name_size = static_cast<uint16_t>(rel.size());
  names_ += rel;
  records_.push_back(r);
}

const ZipRecord* ZipReader::find(std::string_view wanted) const {
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), wanted,
                             [&](uint32_t a, std::string_view w) { return name(records_[a]) < w; });
  return it != sorted_.end() && name(records_[*it]) == wanted ? &records_[*it] : nullptr;
}

ZipRecord& ZipReader::need(const std::string& name) {
  const ZipRecord* found = find(name);
  if (found == nullptr) {
    throw Error(fmt::format("{}: the {} has no record {}", path_, format_.what, visible_text(prefix_ + name)),
                fmt::format("the file is damaged or not a {}; write it again with {}", format_.what, format_.writer));
  }
  ZipRecord& r = records_[static_cast<size_t>(found - records_.data())];
  if (r.data_offset == 0) {
    unsigned char h[kLocalBytes];
    if (!pread(h, kLocalBytes, r.header_offset) || le(h, 4) != kLocal) {
      fail(fmt::format("record {}: no local header at byte {}", name, r.header_offset));
    }
    const uint64_t start = r.header_offset + kLocalBytes + le(h + 26, 2) + le(h + 28, 2);
    const uint64_t end = next_record_offset(r.header_offset);
    if (start > end || r.compressed_size > end - start) {
      fail(fmt::format("record {}: its {} bytes at byte {} run into {} (byte {})", name, r.compressed_size,
                       start, end == cd_offset_ ? "the central directory" : "the next record", end));
    }
    r.data_offset = start;
  }
  return r;
}

std::string ZipReader::read_all(const std::string& name, uint64_t limit) {
  ZipRecord& r = need(name);
  if (r.method != kStored && r.method != kDeflate) {
    fail(fmt::format("record {} is compressed ({}, method {}); PyTorch writes records stored or deflated", name,
                     method_name(r.method), r.method));
  }
  if (r.size > limit) {
    fail(r.method == kStored
             ? fmt::format("record {} holds {} bytes, more than the {} this reader takes", name, r.size, limit)
             : fmt::format("record {} is compressed (deflate, method 8) and declares {} bytes inflated, more than "
                           "the {} this reader takes", name, r.size, limit));
  }
  std::string out;
  if (r.method == kDeflate) {
    if (r.size > kMaxInflatedBytes - inflated_) {
      fail(fmt::format("record {} would make the archive's deflated records inflate to more than {} bytes in all ({} "
                       "so far); no PyTorch file needs as much",
                       name, kMaxInflatedBytes, inflated_));
    }
    inflated_ += r.size;
    out = inflate(r);
  } else {
    out.assign(r.size, '\0');
    if (r.size > 0 && !pread(out.data(), r.size, r.data_offset)) fail(fmt::format("cannot read record {}", name));
  }
  const uint32_t crc = zip_crc32(0, out.data(), out.size());
  if (crc != r.crc32) {
    fail(fmt::format("record {} fails its CRC-32 (recorded {:08x}, computed {:08x})", name, r.crc32, crc));
  }
  return out;
}

// A deflated record, read from the file in 64 KiB pieces and inflated into exactly the size its
// directory entry declares (already bounded by the caller's limit): a stream that would produce a
// byte more, or fewer, is refused, so a bomb costs its declared size and no more.
std::string ZipReader::inflate(const ZipRecord& r) {
  auto bad = [&](const std::string& why) { fail(fmt::format("record {} (deflate) {}", name(r), why)); };
  std::string out(r.size, '\0');
  InflateStream s;
  if (inflateInit2(&s.z, -MAX_WBITS) != Z_OK) bad("cannot be inflated (zlib could not start)");
  s.open = true;
  std::vector<unsigned char> in(std::min<uint64_t>(r.compressed_size, 64u << 10) + 1);
  unsigned char spare = 0;  // room for the first byte beyond the declared size
  uint64_t pos = r.data_offset, left = r.compressed_size;
  for (;;) {
    if (s.z.avail_in == 0 && left > 0) {
      const uint64_t n = std::min<uint64_t>(left, in.size());
      if (!pread(in.data(), n, pos)) bad("cannot be read");
      s.z.next_in = in.data();
      s.z.avail_in = static_cast<uInt>(n);
      pos += n;
      left -= n;
    }
    const uint64_t done = s.z.total_out;
    s.z.next_out = done < out.size() ? reinterpret_cast<Bytef*>(out.data() + done) : &spare;
    s.z.avail_out = done < out.size() ? static_cast<uInt>(std::min<uint64_t>(out.size() - done, 1u << 30)) : 1;
    const int rc = ::inflate(&s.z, Z_NO_FLUSH);
    if (s.z.total_out > out.size()) bad(fmt::format("inflates to more than the {} bytes its directory declares", r.size));
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && s.z.avail_in == 0 && left == 0) bad("ends before its deflate stream does (truncated)");
    if (rc != Z_OK && rc != Z_BUF_ERROR) bad(fmt::format("is not a valid deflate stream ({})", s.z.msg ? s.z.msg : "zlib"));
  }
  if (s.z.total_out != out.size()) {
    bad(fmt::format("inflates to {} bytes, not the {} its directory declares", s.z.total_out, r.size));
  }
  return out;
}

const ZipRecord& ZipReader::stored(const std::string& name) {
  ZipRecord& r = need(name);
  if (r.method != kStored) {
    throw Error(fmt::format("{}: record {} is compressed ({}, method {}); tensor data is read in place, and "
                            "PyTorch stores it uncompressed", path_, visible_text(prefix_ + name), method_name(r.method),
                            r.method),
                fmt::format("write the file again with {} (not re-packed by a zip tool)", format_.writer));
  }
  return r;
}

void ZipReader::read_range(const std::string& name, uint64_t offset, uint64_t n, void* out) {
  const ZipRecord& r = stored(name);
  if (offset > r.size || n > r.size - offset) {
    throw Error(fmt::format("{}: bytes [{}, {}) of record {} lie past its end ({} bytes): the "
                            "tensor's storage is declared larger than its record",
                            path_, offset, offset + n, visible_text(prefix_ + name), r.size),
                fmt::format("the file is damaged or was edited; write it again with {}", format_.writer));
  }
  if (n > 0 && !pread(out, n, r.data_offset + offset)) {
    throw Error(fmt::format("{}: reading record {} failed ({})", path_, visible_text(prefix_ + name),
                            errno != 0 ? std::strerror(errno) : "the file shrank"),
                "the file changed or is damaged");
  }
}

}  // namespace mtrain

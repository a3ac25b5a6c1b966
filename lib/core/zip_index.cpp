#include "mtrain/core/zip_index.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>
#include <zlib.h>

#include "mtrain/core/error.hpp"

namespace mtrain {

namespace {

constexpr uint32_t kEocdSig = 0x06054b50, kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50,
                   kCentralSig = 0x02014b50, kLocalSig = 0x04034b50;

uint16_t u16(const unsigned char* p) { return static_cast<uint16_t>(p[0] | p[1] << 8); }
uint32_t u32(const unsigned char* p) { return u16(p) | static_cast<uint32_t>(u16(p + 2)) << 16; }
uint64_t u64(const unsigned char* p) { return u32(p) | static_cast<uint64_t>(u32(p + 4)) << 32; }

// Exactly n bytes at off (EINTR retried); false on a short read or an error.
bool pread_exact(int fd, void* buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::pread(fd, static_cast<char*>(buf) + got, n - got, static_cast<off_t>(off + got));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

}  // namespace

ZipIndex::ZipIndex(const std::string& path, const std::string& what, const ZipLimits& limits)
    : path_(path), what_(what), limits_(limits) {
  auto bad = [&](const std::string& why) {
    return Error(fmt::format("the {} '{}' is not a readable zip archive: {}", what_, path_, why),
                 "PyTorch writes these with torch.jit.save / torch.save; the file may be truncated "
                 "(an interrupted download) or not the file you meant");
  };
  // O_NONBLOCK: a FIFO must not block the open; the type is checked before any read.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0)
    throw Error(fmt::format("cannot open the {} '{}': {}", what_, path_, std::strerror(errno)),
                "check the path and its permissions");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(fmt::format("the {} '{}' is not a regular file ({})", what_, path_,
                            S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder"
                            : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "a special file"),
                "give the path of the file itself");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  auto pread_all = [&](uint64_t off, size_t n, unsigned char* out) {
    if (off > size_ || n > size_ - off) throw bad(fmt::format("a record at byte {} runs past the end ({} bytes)", off, size_));
    if (!pread_exact(fd_, out, n, off)) throw bad(fmt::format("read failed at byte {}", off));
  };
  try {
    // End of central directory: the last 22 bytes plus a comment of at most 65535.
    const uint64_t tail = std::min<uint64_t>(size_, 22 + 65535);
    if (size_ < 22) throw bad(fmt::format("{} bytes is too short for a zip", size_));
    std::vector<unsigned char> buf(tail);
    pread_all(size_ - tail, tail, buf.data());
    int64_t at = -1;
    for (int64_t i = static_cast<int64_t>(tail) - 22; i >= 0; --i)
      if (u32(&buf[i]) == kEocdSig) { at = i; break; }
    if (at < 0) throw bad("no end-of-directory record (not a zip, or cut short)");
    const unsigned char* e = &buf[at];
    uint64_t count = u16(e + 10), dir_size = u32(e + 12), dir_off = u32(e + 16);
    const uint64_t eocd_pos = size_ - tail + static_cast<uint64_t>(at);
    if (count == 0xFFFF || dir_size == 0xFFFFFFFFu || dir_off == 0xFFFFFFFFu) {
      unsigned char loc[20];
      if (eocd_pos < 20) throw bad("a ZIP64 archive without its locator");
      pread_all(eocd_pos - 20, 20, loc);
      if (u32(loc) != kZip64LocatorSig) throw bad("a ZIP64 archive without its locator");
      unsigned char z[56];
      pread_all(u64(loc + 8), 56, z);
      if (u32(z) != kZip64EocdSig) throw bad("the ZIP64 end-of-directory record is missing");
      count = u64(z + 32), dir_size = u64(z + 40), dir_off = u64(z + 48);
    }
    if (count > limits_.max_entries)
      throw bad(fmt::format("it declares {} entries (limit {})", count, limits_.max_entries));
    if (dir_size > limits_.max_directory_bytes || dir_size < count * 46)
      throw bad(fmt::format("its directory of {} bytes cannot hold {} entries", dir_size, count));
    std::vector<unsigned char> dir(dir_size);
    pread_all(dir_off, dir_size, dir.data());
    entries_.reserve(count);
    size_t p = 0;
    for (uint64_t i = 0; i < count; ++i) {
      if (p + 46 > dir.size() || u32(&dir[p]) != kCentralSig)
        throw bad(fmt::format("directory entry {} is damaged", i));
      const unsigned char* c = &dir[p];
      ZipEntry z;
      z.method = u16(c + 10);
      z.compressed_size = u32(c + 20);
      z.size = u32(c + 24);
      const size_t name_len = u16(c + 28), extra_len = u16(c + 30), comment_len = u16(c + 32);
      z.local_header_offset = u32(c + 42);
      if (p + 46 + name_len + extra_len + comment_len > dir.size())
        throw bad(fmt::format("directory entry {} runs past the directory", i));
      z.name.assign(reinterpret_cast<const char*>(c + 46), name_len);
      // ZIP64 extra field: the 64-bit values, in this order, for each 32-bit field saturated.
      const unsigned char* x = c + 46 + name_len;
      for (size_t q = 0; q + 4 <= extra_len;) {
        const uint16_t id = u16(x + q), len = u16(x + q + 2);
        if (q + 4 + len > extra_len) break;
        if (id == 1) {
          size_t r = q + 4;
          auto take = [&](uint64_t& v) {
            if (r + 8 <= q + 4 + len) { v = u64(x + r); r += 8; }
          };
          if (z.size == 0xFFFFFFFFu) take(z.size);
          if (z.compressed_size == 0xFFFFFFFFu) take(z.compressed_size);
          if (z.local_header_offset == 0xFFFFFFFFu) take(z.local_header_offset);
        }
        q += 4 + len;
      }
      if (z.local_header_offset >= size_ || z.compressed_size > size_ - z.local_header_offset)
        throw bad(fmt::format("entry '{}' claims {} bytes at offset {}, beyond the file's {} bytes", z.name,
                              z.compressed_size, z.local_header_offset, size_));
      if (z.method == 0 && z.size != z.compressed_size)
        throw bad(fmt::format("stored entry '{}' declares {} bytes but holds {}", z.name, z.size, z.compressed_size));
      entries_.push_back(std::move(z));
      p += 46 + name_len + extra_len + comment_len;
    }
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
}

ZipIndex::~ZipIndex() {
  if (fd_ >= 0) ::close(fd_);
}

const ZipEntry* ZipIndex::find(const std::string& name) const {
  for (const auto& e : entries_)
    if (e.name == name) return &e;
  return nullptr;
}

std::string ZipIndex::read(const ZipEntry& e) const {
  auto bad = [&](const std::string& why) {
    return Error(fmt::format("the {} '{}': record '{}' {}", what_, path_, e.name, why),
                 "the file is damaged or was not written by PyTorch; export it again");
  };
  if (e.method != 0 && e.method != 8)
    throw bad(fmt::format("is compressed with zip method {}; PyTorch writes records stored or deflated", e.method));
  if (e.size > limits_.max_entry_read) throw bad(fmt::format("is {} bytes, more than the {} read into memory", e.size, limits_.max_entry_read));
  unsigned char h[30];
  if (e.local_header_offset + 30 > size_ || !pread_exact(fd_, h, 30, e.local_header_offset) ||
      u32(h) != kLocalSig)
    throw bad("has no local header where the directory says");
  const uint64_t data = e.local_header_offset + 30 + u16(h + 26) + u16(h + 28);
  if (data > size_ || e.compressed_size > size_ - data) throw bad("runs past the end of the file");
  if (e.compressed_size > limits_.max_entry_read) throw bad("is larger than what is read into memory");
  std::string raw(e.compressed_size, '\0');
  if (!pread_exact(fd_, raw.data(), raw.size(), data)) throw bad("could not be read");
  if (e.method == 0) return raw;
  // Deflated (PyTorch 2.x deflates the code/ records of TorchScript archives). The output is
  // bounded by the size the directory declares, itself bounded above: a zip bomb stops there.
  std::string out(e.size, '\0');
  z_stream z{};
  if (inflateInit2(&z, -MAX_WBITS) != Z_OK) throw bad("could not be inflated (zlib)");
  z.next_in = reinterpret_cast<Bytef*>(raw.data());
  z.avail_in = static_cast<uInt>(raw.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int rc = inflate(&z, Z_FINISH);
  const uLong produced = z.total_out;
  inflateEnd(&z);
  if (rc != Z_STREAM_END || produced != e.size)
    throw bad(fmt::format("does not inflate to the {} bytes its directory declares (zlib {})", e.size,
                          rc == Z_BUF_ERROR ? "wants more room: more data than declared" : std::to_string(rc)));
  return out;
}

}  // namespace mtrain

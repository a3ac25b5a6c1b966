#include "lib/tracking/record_framing.hpp"

#include <cstring>

#include "lib/core/crc32c.hpp"

namespace mtrain::tracking {

namespace {

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t get_le(std::string_view in, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return v;
}

}  // namespace

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t crc = crc32c_update(0, bytes.data(), bytes.size());
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string frame_record(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(std::string_view(out.data(), 8)), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

std::optional<std::vector<std::string>> read_records(std::string_view file, uint64_t max_record) {
  std::vector<std::string> records;
  size_t at = 0;
  while (at < file.size()) {
    if (file.size() - at < 12) return std::nullopt;
    const uint64_t n = get_le(file, at, 8);
    if (get_le(file, at + 8, 4) != masked_crc32c(file.substr(at, 8))) return std::nullopt;
    if (n > max_record || file.size() - at - 12 < n + 4) return std::nullopt;
    const std::string_view data = file.substr(at + 12, n);
    if (get_le(file, at + 12 + n, 4) != masked_crc32c(data)) return std::nullopt;
    records.emplace_back(data);
    at += 16 + n;
  }
  return records;
}

}  // namespace mtrain::tracking

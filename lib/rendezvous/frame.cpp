#include "lib/rendezvous/frame.hpp"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace mtrain::rendezvous {

namespace {
constexpr char kMagic[4] = {'M', 'T', 'R', '1'};

// Deepest bracket nesting outside strings; parsing stops caring once it is over the limit.
int nesting_depth(const std::string& s) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : s) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if (c == ']' || c == '}') --depth;
    if (deepest > kMaxJsonDepth) break;
  }
  return deepest;
}
}  // namespace

std::string encode_frame(const nlohmann::json& message) {
  std::string payload = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  uint32_t n = static_cast<uint32_t>(payload.size());
  std::string out(kMagic, 4);
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((n >> shift) & 0xff));
  out += payload;
  return out;
}

size_t decode_header(const std::array<unsigned char, kFrameHeaderBytes>& h, size_t max_frame_bytes) {
  if (std::memcmp(h.data(), kMagic, 4) != 0) throw FrameError("not an mtrain rendezvous frame (bad magic)");
  size_t n = (size_t{h[4]} << 24) | (size_t{h[5]} << 16) | (size_t{h[6]} << 8) | size_t{h[7]};
  if (n == 0) throw FrameError("empty frame");
  if (n > max_frame_bytes)
    throw FrameError(fmt::format("frame of {} bytes is over the limit of {} bytes", n, max_frame_bytes));
  return n;
}

nlohmann::json decode_payload(const std::string& payload) {
  if (nesting_depth(payload) > kMaxJsonDepth) throw FrameError("message nested too deeply");
  auto j = nlohmann::json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw FrameError("message is not valid JSON");
  if (!j.is_object()) throw FrameError("message is not a JSON object");
  return j;
}

}  // namespace mtrain::rendezvous

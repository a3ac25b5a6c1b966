#pragma once
// Wire format of the rendezvous store: every message, each way, is one frame
//
//   "MTR1"  magic (4 bytes)      — rejects stray protocols (HTTP probes, ssh banners) at once
//   length  uint32, big endian   — payload bytes, 1..max_frame_bytes
//   payload UTF-8 JSON object    — requests carry {"op", "token", "node", …}
//
// The limits are checked before a byte of the payload is read, so an oversized announcement
// costs the server 8 bytes of reading. JSON nesting is bounded before parsing.
#include <array>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace mtrain::rendezvous {

inline constexpr size_t kFrameHeaderBytes = 8;
inline constexpr size_t kDefaultMaxFrameBytes = size_t{64} * 1024;
inline constexpr int kMaxJsonDepth = 8;

// A peer broke the framing or sent an unusable payload; the connection is closed.
class FrameError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

std::string encode_frame(const nlohmann::json& message);

// The payload length a header announces; FrameError on a wrong magic, 0, or > max_frame_bytes.
size_t decode_header(const std::array<unsigned char, kFrameHeaderBytes>& header, size_t max_frame_bytes);

// Parse a payload into a JSON object; FrameError if it is not JSON, not an object, or nested
// deeper than kMaxJsonDepth.
nlohmann::json decode_payload(const std::string& payload);

}  // namespace mtrain::rendezvous

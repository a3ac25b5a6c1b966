#include "lib/core/input_limits.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include <fmt/format.h>

namespace mtrain {

namespace {
std::string mib(size_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1u << 20)); }
}  // namespace

Error input_too_large(const std::string& origin, size_t bytes, const InputLimits& lim) {
  return Error(fmt::format("{}: the file is larger than {} ({}{} read); not parsing it", origin,
                           mib(lim.max_bytes), bytes > lim.max_bytes ? "more than " : "", mib(bytes)),
               "Configuration files are a few KiB: check that this is the file you meant.");
}

Error input_too_deep(const std::string& origin, const InputLimits& lim) {
  return Error(fmt::format("{}: values are nested more than {} levels deep; not reading it", origin,
                           lim.max_depth),
               "Configuration files nest a few levels: check that this is the file you meant.");
}

Error input_too_many_nodes(const std::string& origin, bool aliases, const InputLimits& lim) {
  return Error(fmt::format("{}: the document {} more than {} values{}; not reading it", origin,
                           aliases ? "expands (through its YAML aliases *name)" : "holds",
                           lim.max_nodes, aliases ? " — an alias bomb" : ""),
               aliases ? "Write the values out, or use each &anchor a few times, not aliases of aliases."
                       : "Check that this is the file you meant.");
}

void check_input_size(const std::string& origin, size_t bytes, const InputLimits& lim) {
  if (bytes > lim.max_bytes) throw input_too_large(origin, bytes, lim);
}

std::optional<std::string> read_input_file(const std::string& path, const InputLimits& lim) {
  // O_NONBLOCK for the open only: a FIFO nobody writes to opens (and then reads as empty)
  // instead of blocking forever; a pipe from `<(…)` still reads whole. At most max_bytes + 1
  // bytes are read, so /dev/zero ends in input_too_large, not in an endless read.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) return std::nullopt;
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags >= 0) ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  char buf[1 << 16];
  while (text.size() <= lim.max_bytes) {
    const ssize_t r = ::read(fd.get(), buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && text.empty()) return std::nullopt;  // a folder, …: as unreadable as a missing file
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  fd.reset();
  check_input_size(path, text.size(), lim);
  return text;
}

namespace {

// Depth and value count of JSON text in one pass over the bytes (strings and, when asked,
// comments skipped), so that the limits are checked before nlohmann builds anything. Why not the
// parser's callback: with a callback, nlohmann rescans the parent object for discarded values at
// the end of every child object — quadratic: `checkpoint verify` of a 4·10^4-tensor manifest
// took 24 s. Values are over-counted (every ',' ':' and bracket), which only makes the limit a
// little stricter than the count of values.
void scan_json_shape(const std::string& text, const std::string& origin, bool comments,
                     const InputLimits& lim) {
  int depth = 0;
  size_t nodes = 1;
  const size_t n = text.size();
  for (size_t i = 0; i < n; ++i) {
    const char c = text[i];
    switch (c) {
      case '"':
        for (++i; i < n && text[i] != '"'; ++i)
          if (text[i] == '\\') ++i;
        break;
      case '[':
      case '{':
        if (++depth > lim.max_depth) throw input_too_deep(origin, lim);
        ++nodes;
        break;
      case ']':
      case '}':
        --depth;
        break;
      case ',':
        ++nodes;
        break;
      case '/':
        if (comments && i + 1 < n && text[i + 1] == '/') {
          while (i < n && text[i] != '\n') ++i;
        } else if (comments && i + 1 < n && text[i + 1] == '*') {
          const size_t e = text.find("*/", i + 2);
          i = e == std::string::npos ? n : e + 1;
        }
        break;
      default:
        break;
    }
    if (nodes > lim.max_nodes) throw input_too_many_nodes(origin, false, lim);
  }
}

}  // namespace

nlohmann::json parse_json_limited(const std::string& text, const std::string& origin,
                                  bool ignore_comments, const InputLimits& lim) {
  using nlohmann::json;
  check_input_size(origin, text.size(), lim);
  // The limits first, in linear time; then the plain parser (also linear), which nests only as
  // deep as the scan allowed.
  scan_json_shape(text, origin, ignore_comments, lim);
  return json::parse(text, nullptr, /*allow_exceptions=*/true, ignore_comments);
}

}  // namespace mtrain

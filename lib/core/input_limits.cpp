#include "mtrain/core/input_limits.hpp"

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
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  std::string text;
  char buf[1 << 16];
  while (text.size() <= lim.max_bytes) {
    const ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && text.empty()) {  // a folder, …: as unreadable as a missing file
      ::close(fd);
      return std::nullopt;
    }
    if (r <= 0) break;
    text.append(buf, static_cast<size_t>(r));
  }
  ::close(fd);
  check_input_size(path, text.size(), lim);
  return text;
}

nlohmann::json parse_json_limited(const std::string& text, const std::string& origin,
                                  bool ignore_comments, const InputLimits& lim) {
  using nlohmann::json;
  check_input_size(origin, text.size(), lim);
  size_t nodes = 0;
  // The callback sees every value as the parser builds it, with its depth: the document is
  // refused at the first value past a limit, before anything recursive walks it.
  json::parser_callback_t limit = [&](int depth, json::parse_event_t, json&) {
    if (depth > lim.max_depth) throw input_too_deep(origin, lim);
    if (++nodes > 2 * lim.max_nodes) throw input_too_many_nodes(origin, false, lim);  // 2 events a container
    return true;
  };
  return json::parse(text, limit, /*allow_exceptions=*/true, ignore_comments);
}

}  // namespace mtrain

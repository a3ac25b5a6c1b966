#include "lib/core/error_file.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace mtrain {

using nlohmann::json;
using Clock = std::chrono::system_clock;

std::string error_file_text(const ErrorRecord& r) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(r.when.time_since_epoch()).count();
  json extra = {{"timestamp", std::to_string(secs)}};  // torchrun: a string of unix seconds
  if (r.rank >= 0) extra["rank"] = r.rank;
  if (!r.host.empty()) extra["host"] = r.host;
  if (r.pid > 0) extra["pid"] = r.pid;
  // Invalid UTF-8 in a message (a file name, a library's text) must not make dump() throw.
  return json{{"message", {{"message", r.message}, {"extraInfo", extra}}}}.dump(-1, ' ', false,
                                                                               json::error_handler_t::replace) +
         "\n";
}

std::optional<std::string> error_file_message(const std::string& text) {
  const json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("message")) return std::nullopt;
  const json* m = &j["message"];
  if (m->is_object() && m->contains("message")) m = &(*m)["message"];
  if (m->is_string()) return m->get<std::string>();
  return m->dump();
}

namespace {
// Nanoseconds since the epoch of the first own fault; 0: none yet.
std::atomic<long long> g_own_failure{0};
}  // namespace

void note_own_failure() {
  long long expected = 0;
  const long long now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
  g_own_failure.compare_exchange_strong(expected, now);
}

std::optional<Clock::time_point> own_failure_time() {
  const long long ns = g_own_failure.load();
  if (ns == 0) return std::nullopt;
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(std::chrono::nanoseconds(ns)));
}

bool write_error_file(const std::string& path, const ErrorRecord& r) noexcept {
  try {
    const std::string text = error_file_text(r);
    const std::string part = fmt::format("{}.{}.part", path, ::getpid());
    ::unlink(part.c_str());  // our own leftover only: the name carries our pid
    UniqueFd fd(::open(part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0640));
    if (!fd) return false;
    size_t done = 0;
    while (done < text.size()) {
      const ssize_t w = ::write(fd.get(), text.data() + done, text.size() - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(r.when.time_since_epoch()).count();
    const struct timespec times[2] = {{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)},
                                      {static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)}};
    // close() is checked: a written file's last error may only be reported there.
    const bool ok = done == text.size() && ::futimens(fd.get(), times) == 0 && fd.close() == 0;
    if (!ok || ::rename(part.c_str(), path.c_str()) != 0) {
      const int e = errno;
      ::unlink(part.c_str());
      errno = e;
      return false;
    }
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace mtrain

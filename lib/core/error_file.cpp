#include "lib/core/error_file.hpp"

#include <atomic>
#include <cerrno>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/atomic_file.hpp"

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
    AtomicWrite how;
    how.mode = 0640;
    how.mtime = r.when;
    const int err = replace_file_atomically(path, error_file_text(r), how);
    errno = err;
    return err == 0;
  } catch (...) {
    return false;
  }
}

}  // namespace mtrain

#include "lib/estimate/probe_cache.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/atomic_file.hpp"

namespace mtrain::estimate {

namespace {

std::string cache_dir() {
  if (const char* d = std::getenv("MTRAIN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/mtrain/estimate-probe";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/mtrain/estimate-probe";
  return "";
}

// 64-bit FNV-1a: a file name, not a security boundary.
uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string probe_cache_key(const std::string& worker, const std::string& args, const std::string& job_text) {
  struct stat st {};
  const std::string binary =
      ::stat(worker.c_str(), &st) == 0 ? fmt::format("{}:{}:{}", worker, st.st_size, st.st_mtime) : worker;
  const uint64_t h = fnv1a(job_text, fnv1a(args, fnv1a(binary)));
  return fmt::format("{:016x}", h);
}

std::optional<nlohmann::json> probe_cache_get(const std::string& key) {
  const std::string dir = cache_dir();
  if (dir.empty()) return std::nullopt;
  std::ifstream in(dir + "/" + key + ".json");
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const std::exception&) {
    return std::nullopt;  // a torn or foreign file: measure again
  }
}

void probe_cache_put(const std::string& key, const nlohmann::json& answer) {
  const std::string dir = cache_dir();
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return;
  // Replaced whole: a reader never sees half a file. A cache that cannot be written is only slower.
  (void)replace_file_atomically(dir + "/" + key + ".json", answer.dump());
}

}  // namespace mtrain::estimate

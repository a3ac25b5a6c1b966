#include "lib/trainer/loop/metrics.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/trainer/checkpoint/durable_file.hpp"

namespace mtrain::trainer {

MetricsLog::MetricsLog(const std::string& path, bool append)
    : out_(path, append ? std::ios::app : std::ios::trunc), path_(path) {
  if (!out_) {
    throw RuntimeFailure(fmt::format("{}: cannot open the metrics file for writing", path),
                         "check that train.work_dir is writable");
  }
}

void MetricsLog::write(const nlohmann::json& record) {
  if (!out_.is_open()) return;
  out_ << record.dump() << '\n';
  out_.flush();
}

int64_t peak_rss_bytes() {
  // VmHWM (the resident high-water mark); getrusage's ru_maxrss where /proc is not mounted.
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmHWM:", 0) == 0) {
      try {
        return std::stoll(line.substr(6)) * 1024;  // "VmHWM:   123456 kB"
      } catch (const std::exception&) {
        break;
      }
    }
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<int64_t>(ru.ru_maxrss) * 1024;  // Linux: kilobytes
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void write_file_atomic(const std::string& path, const std::string& text) {
  write_file_durably(path, text);  // <path>.part (never through a planted symlink), then rename
}

}  // namespace mtrain::trainer

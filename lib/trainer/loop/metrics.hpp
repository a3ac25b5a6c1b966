#pragma once
// <work_dir>/metrics.jsonl (one JSON object per logged step and per validation), peak memory,
// and the statistics summary.json is built from.
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

class MetricsLog {
 public:
  MetricsLog() = default;
  // append: a resumed run continues the file; a fresh run starts it anew. Throws
  // mtrain::Error when it cannot open it.
  MetricsLog(const std::string& path, bool append);
  void write(const nlohmann::json& record);

 private:
  std::ofstream out_;
  std::string path_;
};

// Peak resident set size of this process in bytes (CPU "memory").
int64_t peak_rss_bytes();

double median(std::vector<double> v);

// Writes text to path via a temporary file and a rename.
void write_file_atomic(const std::string& path, const std::string& text);

}  // namespace mtrain::trainer

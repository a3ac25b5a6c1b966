#pragma once
// Rank output: each rank's stdout/stderr are split into lines, tagged "[host:rank] ", filtered
// for the console (--ranks-filter), written to per-rank log files (--log-dir), and the last
// stderr lines are kept for the failure report.
#include <cstdio>
#include <deque>
#include <memory>
#include <set>
#include <string>

namespace mtrain::launch {

struct OutputOptions {
  bool prefix = true;
  std::string prefix_format = "[{host}:{rank}] ";  // {host} {rank} {local_rank} {role}
  std::set<int> ranks_filter;                      // empty: every rank reaches the console
  std::string log_dir;                             // per attempt: <log_dir>/attempt_<k>/<rank>/{stdout,stderr}.log
  bool tee = false;                                // with log_dir: console as well
  size_t tail_lines = 20;
};

enum class Stream { Out, Err };

class RankOutput {
 public:
  RankOutput(const OutputOptions& opt, const std::string& host, int rank, int local_rank,
             const std::string& role, int attempt);
  ~RankOutput();
  void feed(Stream s, const char* data, size_t n);
  void finish();  // flush partial lines at EOF
  const std::deque<std::string>& stderr_tail() const { return tail_; }

 private:
  void emit(Stream s, const std::string& line);
  const OutputOptions& opt_;
  std::string prefix_;
  bool console_ = true;
  std::string partial_[2];
  std::FILE* file_[2] = {nullptr, nullptr};
  std::deque<std::string> tail_;
};

std::string format_prefix(const std::string& fmt, const std::string& host, int rank, int local_rank,
                          const std::string& role);

}  // namespace mtrain::launch

#pragma once
// Rank output: each rank's stdout/stderr are split into lines, tagged "[host:rank] ", filtered
// for the console (--ranks-filter), written to per-rank log files (--log-dir), and the last
// stderr lines are kept for the failure report.
//
// Permissions do not depend on the umask being sane: folders are created with an explicit mode
// (the attempt and rank folders 0750, inside the 0750 run folder), log files 0640 (a program's
// output may hold secrets); a stricter umask narrows them further, a looser one (000) cannot
// widen them.
#include <sys/types.h>

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
  bool raw_output = false;                         // relay control characters to a terminal as they are
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
  void to_console(int i, const std::string& line);
  void release_held(int i);  // the console's fold line (or a lone header) for what was held back
  const OutputOptions& opt_;
  std::string prefix_;
  bool console_ = true;
  bool visible_[2] = {false, false};  // render control characters (the stream is a terminal)
  std::string partial_[2];
  std::FILE* file_[2] = {nullptr, nullptr};
  std::deque<std::string> tail_;
  // A C++ backtrace on its way to the console (stderr_tail.hpp): its header and frames are held
  // back and replaced by one line, naming the log file that keeps them (or --log-dir), at the next
  // other line or EOF. LibTorch's frames are offsets into its libraries: noise beside the message.
  std::string log_path_[2];
  std::string held_header_[2];
  std::size_t held_frames_[2] = {0, 0};
};

// Creates `path` and its missing parents with `mode` (never wider, whatever the umask). Folders
// that exist are left as they are; one that is writable by every user and not sticky (others
// could replace the logs) is warned about on `warn`, once per folder per process. Throws
// mtrain::Error naming the folder if it cannot be created.
void create_folders(const std::string& path, mode_t mode, std::FILE* warn = stderr);

std::string format_prefix(const std::string& fmt, const std::string& host, int rank, int local_rank,
                          const std::string& role);

}  // namespace mtrain::launch

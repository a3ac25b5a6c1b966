#include "mtrain/launch/output.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::launch {

std::string format_prefix(const std::string& f, const std::string& host, int rank, int local_rank,
                          const std::string& role) {
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    if (f[i] == '{') {
      size_t close = f.find('}', i);
      if (close != std::string::npos) {
        std::string key = f.substr(i + 1, close - i - 1);
        if (key == "host") out += host;
        else if (key == "rank") out += std::to_string(rank);
        else if (key == "local_rank") out += std::to_string(local_rank);
        else if (key == "role") out += role;
        else out += f.substr(i, close - i + 1);
        i = close;
        continue;
      }
    }
    out += f[i];
  }
  return out;
}

RankOutput::RankOutput(const OutputOptions& opt, const std::string& host, int rank, int local_rank,
                       const std::string& role, int attempt)
    : opt_(opt) {
  if (opt.prefix) prefix_ = format_prefix(opt.prefix_format, host, rank, local_rank, role);
  console_ = opt.ranks_filter.empty() || opt.ranks_filter.count(rank);
  if (!opt.log_dir.empty()) {
    console_ = console_ && opt.tee;
    auto dir = std::filesystem::path(opt.log_dir) / fmt::format("attempt_{}", attempt) / std::to_string(rank);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    const char* names[2] = {"stdout.log", "stderr.log"};
    for (int i = 0; i < 2; ++i) {
      auto path = (dir / names[i]).string();
      file_[i] = std::fopen(path.c_str(), "w");
      if (!file_[i])
        throw Error(fmt::format("cannot write the log file {}", path), "Check --log-dir and its permissions.");
      chmod(path.c_str(), 0640);  // logs may hold secrets from the program: not world-readable
    }
  }
}

RankOutput::~RankOutput() {
  for (auto* f : file_)
    if (f) std::fclose(f);
}

void RankOutput::feed(Stream s, const char* data, size_t n) {
  std::string& buf = partial_[static_cast<int>(s)];
  buf.append(data, n);
  size_t start = 0, nl;
  while ((nl = buf.find('\n', start)) != std::string::npos) {
    emit(s, buf.substr(start, nl - start));
    start = nl + 1;
  }
  buf.erase(0, start);
  // A line without a newline should not grow without bound (progress bars, binary junk).
  if (buf.size() > 64 * 1024) {
    emit(s, buf);
    buf.clear();
  }
}

void RankOutput::finish() {
  for (int i = 0; i < 2; ++i) {
    if (!partial_[i].empty()) emit(static_cast<Stream>(i), partial_[i]);
    partial_[i].clear();
    if (file_[i]) std::fflush(file_[i]);
  }
}

void RankOutput::emit(Stream s, const std::string& line) {
  int i = static_cast<int>(s);
  if (file_[i]) {
    std::fwrite(line.data(), 1, line.size(), file_[i]);
    std::fputc('\n', file_[i]);
  }
  if (s == Stream::Err) {
    tail_.push_back(line);
    while (tail_.size() > opt_.tail_lines) tail_.pop_front();
  }
  if (console_) {
    // One write per line so lines of different ranks never interleave mid-line.
    std::string out = prefix_ + line + "\n";
    int fd = s == Stream::Out ? STDOUT_FILENO : STDERR_FILENO;
    const char* p = out.data();
    size_t left = out.size();
    while (left > 0) {
      ssize_t w = ::write(fd, p, left);
      if (w <= 0) break;
      p += w;
      left -= static_cast<size_t>(w);
    }
  }
}

}  // namespace mtrain::launch

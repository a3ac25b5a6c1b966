#include "mtrain/launch/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::launch {

namespace {

constexpr mode_t kFolderMode = 0750;
constexpr mode_t kFileMode = 0640;

void warn_world_writable(const std::string& folder, mode_t mode, std::FILE* warn) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(folder).second) return;
  std::fprintf(warn,
               "mtrain: warning: the log folder %s is writable by every user (mode %04o): others can replace or "
               "delete the logs; `chmod o-w` it\n",
               folder.c_str(), static_cast<unsigned>(mode & 07777));
}

// Opens a new log file for writing with kFileMode; not through a symbolic link, not inherited
// by the ranks started later.
std::FILE* open_log(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, kFileMode);
  if (fd < 0)
    throw Error(fmt::format("cannot write the log file {}: {}", path, std::strerror(errno)),
                "Check --log-dir and its permissions.");
  struct stat st;
  // A file that was there already keeps its mode only if it is not wider.
  if (fstat(fd, &st) == 0 && (st.st_mode & ~kFileMode & 07777) != 0) fchmod(fd, st.st_mode & kFileMode);
  std::FILE* f = fdopen(fd, "w");
  if (!f) {
    ::close(fd);
    throw Error(fmt::format("cannot write the log file {}", path), "Check --log-dir and its permissions.");
  }
  return f;
}

}  // namespace

void create_folders(const std::string& path, mode_t mode, std::FILE* warn) {
  if (path.empty()) return;
  // Each prefix ending before a '/', then the whole path: "/a/b" → "/a", "/a/b".
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    std::string prefix = path.substr(0, end);
    if (!prefix.empty() && prefix.back() != '/') {
      if (::mkdir(prefix.c_str(), mode) != 0) {
        int err = errno;
        struct stat st;
        if (::stat(prefix.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
          throw Error(fmt::format("cannot create the folder {}: {}", prefix, std::strerror(err == EEXIST ? ENOTDIR : err)),
                      "Check --log-dir and its permissions.");
        if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) warn_world_writable(prefix, st.st_mode, warn);
      }
    }
    if (end == std::string::npos) break;
  }
}

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
    create_folders(dir.string(), kFolderMode);
    const char* names[2] = {"stdout.log", "stderr.log"};
    try {
      for (int i = 0; i < 2; ++i) file_[i] = open_log((dir / names[i]).string());
    } catch (...) {
      if (file_[0]) std::fclose(file_[0]);  // no destructor runs for a throwing constructor
      throw;
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

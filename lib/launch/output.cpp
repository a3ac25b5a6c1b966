#include "lib/launch/output.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/launch/console_write.hpp"
#include "lib/launch/stderr_tail.hpp"
#include "lib/core/visible_text.hpp"

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
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, kFileMode));
  if (!fd)
    throw UsageError(fmt::format("cannot write the log file {}: {}", path, std::strerror(errno)),
                     "Check --log-dir and its permissions.");
  struct stat st;
  // A file that was there already keeps its mode only if it is not wider.
  if (fstat(fd.get(), &st) == 0 && (st.st_mode & ~kFileMode & 07777) != 0) fchmod(fd.get(), st.st_mode & kFileMode);
  std::FILE* f = fdopen(fd.get(), "w");
  if (!f) {
    throw UsageError(fmt::format("cannot write the log file {}", path), "Check --log-dir and its permissions.");
  }
  fd.release();  // the FILE owns it now
  return f;
}

// The console went away (`mtrain launch … | head`): the job goes on without it. Process-wide:
// every rank's relay writes to the same two descriptors.
std::atomic<bool> g_gone[2]{};  // static storage: false
std::atomic<bool> g_gone_said{false};

void console_went_away(int stream, const std::string& log_dir) {
  g_gone[stream] = true;
  if (g_gone_said.exchange(true) || g_gone[1]) return;
  // Said once, on stderr, which may be gone too: then it is simply not said.
  std::string msg = fmt::format(
      "mtrain: the console's {} went away (broken pipe); the job goes on; rank output {}\n",
      stream == 0 ? "stdout" : "stderr",
      log_dir.empty() ? std::string("meant for it is dropped (no --log-dir)") : "is still written to " + log_dir);
  if (write_all(STDERR_FILENO, msg.data(), msg.size()) == WriteResult::Gone) g_gone[1] = true;
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
          throw UsageError(
              fmt::format("cannot create the folder {}: {}", prefix, std::strerror(err == EEXIST ? ENOTDIR : err)),
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
  // On a terminal, escape sequences in a rank's output would act instead of being read.
  for (int i = 0; i < 2; ++i) visible_[i] = !opt.raw_output && isatty(i == 0 ? STDOUT_FILENO : STDERR_FILENO);
  if (!opt.log_dir.empty()) {
    console_ = console_ && opt.tee;
    auto dir = std::filesystem::path(opt.log_dir) / fmt::format("attempt_{}", attempt) / std::to_string(rank);
    create_folders(dir.string(), kFolderMode);
    const char* names[2] = {"stdout.log", "stderr.log"};
    try {
      for (int i = 0; i < 2; ++i) {
        log_path_[i] = (dir / names[i]).string();
        file_[i] = open_log(log_path_[i]);
      }
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
  if (buf.size() > size_t{64} * 1024) {
    emit(s, buf);
    buf.clear();
  }
}

void RankOutput::finish() {
  for (int i = 0; i < 2; ++i) {
    if (!partial_[i].empty()) emit(static_cast<Stream>(i), partial_[i]);
    partial_[i].clear();
    release_held(i);
    if (file_[i]) std::fflush(file_[i]);
  }
}

void RankOutput::emit(Stream s, const std::string& line) {
  int i = static_cast<int>(s);
  if (file_[i]) {
    std::fwrite(line.data(), 1, line.size(), file_[i]);
    std::fputc('\n', file_[i]);
  }
  if (s == Stream::Err) push_tail_line(tail_, opt_.tail_lines, line);  // stack frames folded
  if (!console_ || g_gone[i]) return;
  if (is_stack_frame(line)) {
    ++held_frames_[i];
    return;
  }
  if (is_backtrace_header(line)) {
    release_held(i);
    held_header_[i] = line;
    return;
  }
  // An empty line ends c10's backtrace: part of it.
  if (line.empty() && held_frames_[i] > 0) return;
  release_held(i);
  to_console(i, line);
}

void RankOutput::release_held(int i) {
  if (held_frames_[i] > 0) {
    to_console(i, log_path_[i].empty() ? console_fold_line(held_frames_[i], "--log-dir DIR") + " (a rank's whole output)"
                                        : console_fold_line(held_frames_[i], log_path_[i]));
  }
  else if (!held_header_[i].empty()) to_console(i, held_header_[i]);
  held_frames_[i] = 0;
  held_header_[i].clear();
}

void RankOutput::to_console(int i, const std::string& line) {
  if (!console_ || g_gone[i]) return;
  // One write per line so lines of different ranks never interleave mid-line; retried after
  // EINTR and partial writes, so no line is lost to a slow reader.
  std::string out = prefix_ + (visible_[i] ? visible_text(line) : line) + "\n";
  int fd = i == 0 ? STDOUT_FILENO : STDERR_FILENO;
  if (write_all(fd, out.data(), out.size()) == WriteResult::Gone) console_went_away(i, opt_.log_dir);
}

}  // namespace mtrain::launch

// Log folders and files under --log-dir: explicit modes whatever the umask, existing folders left
// alone but a world-writable one warned about once.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "captured.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/output.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace mtrain::launch;

namespace {

struct Umask {
  mode_t old;
  explicit Umask(mode_t m) : old(::umask(m)) {}
  ~Umask() { ::umask(old); }
};

using mtrain::testing::TempDir;

mode_t mode_of(const std::string& p) {
  struct stat st;
  REQUIRE(::stat(p.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

}  // namespace

TEST_CASE("rank logs under umask 000: folders 0750, files 0640, nothing world-writable", "[launch][output]") {
  TempDir t;
  Umask u(0);
  OutputOptions opt;
  opt.log_dir = t.str() + "/logs/job-1";  // nothing of it exists yet
  {
    RankOutput out(opt, "h", 3, 1, "default", 0);
    out.feed(Stream::Out, "hello\n", 6);
    out.feed(Stream::Err, "oops\n", 5);
    out.finish();
  }
  std::string rank_dir = opt.log_dir + "/attempt_0/3";
  for (const auto& d : {t.str() + "/logs", opt.log_dir, opt.log_dir + "/attempt_0", rank_dir}) {
    INFO(d);
    CHECK(mode_of(d) == 0750);
  }
  CHECK(mode_of(rank_dir + "/stdout.log") == 0640);
  CHECK(mode_of(rank_dir + "/stderr.log") == 0640);
  std::ifstream in(rank_dir + "/stdout.log");
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "hello\n");
}

TEST_CASE("rank logs: a stricter umask narrows the modes further", "[launch][output]") {
  TempDir t;
  Umask u(077);
  OutputOptions opt;
  opt.log_dir = t.str() + "/logs";
  { RankOutput out(opt, "h", 0, 0, "default", 2); }
  CHECK(mode_of(t.str() + "/logs/attempt_2/0") == 0700);
  CHECK(mode_of(t.str() + "/logs/attempt_2/0/stderr.log") == 0600);
}

TEST_CASE("create_folders: an existing world-writable folder is kept as it is and warned about once",
          "[launch][output]") {
  TempDir t;
  Umask u(0);
  std::string open_dir = t.str() + "/shared";
  REQUIRE(::mkdir(open_dir.c_str(), 0777) == 0);
  REQUIRE(::chmod(open_dir.c_str(), 0777) == 0);
  std::string sticky = t.str() + "/sticky";
  REQUIRE(::mkdir(sticky.c_str(), 0777) == 0);
  REQUIRE(::chmod(sticky.c_str(), 01777) == 0);
  std::FILE* warn = std::tmpfile();
  REQUIRE(warn);
  create_folders(open_dir + "/a/b", 0755, warn);
  create_folders(open_dir + "/c", 0755, warn);
  create_folders(sticky + "/d", 0755, warn);  // like /tmp: others cannot replace our files
  std::string text = slurp(warn);
  std::fclose(warn);
  CHECK(mode_of(open_dir) == 0777);
  CHECK(mode_of(open_dir + "/a") == 0755);
  CHECK(mode_of(open_dir + "/a/b") == 0755);
  CHECK(mode_of(sticky + "/d") == 0755);
  CHECK(text.find(open_dir + " is writable by every user") != std::string::npos);
  CHECK(text.find("warning") == text.rfind("warning"));  // once
  CHECK(text.find(sticky) == std::string::npos);
}

TEST_CASE("create_folders: a file in the way is an error naming it", "[launch][output]") {
  TempDir t;
  std::string file = t.str() + "/plain";
  std::ofstream(file) << "x";
  try {
    create_folders(file + "/logs", 0755);
    FAIL("no error");
  } catch (const mtrain::Error& e) {
    CHECK(std::string(e.what()).find(file) != std::string::npos);
  }
}

TEST_CASE("rank logs are not written through a symbolic link", "[launch][output]") {
  TempDir t;
  std::string target = t.str() + "/elsewhere";
  std::ofstream(target) << "keep";
  REQUIRE(::mkdir((t.str() + "/attempt_0").c_str(), 0755) == 0);
  REQUIRE(::mkdir((t.str() + "/attempt_0/0").c_str(), 0755) == 0);
  REQUIRE(::symlink(target.c_str(), (t.str() + "/attempt_0/0/stdout.log").c_str()) == 0);
  OutputOptions opt;
  opt.log_dir = t.str();
  CHECK_THROWS_AS(RankOutput(opt, "h", 0, 0, "default", 0), mtrain::Error);
  std::ifstream in(target);
  std::string kept;
  in >> kept;
  CHECK(kept == "keep");
}

namespace {
// What `body` wrote to file descriptor 2 (the console's stderr), through a temporary file.
template <class F>
std::string console_stderr(F body) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  std::fflush(stderr);
  const int saved = ::dup(2);
  ::dup2(fileno(f), 2);
  body();
  ::dup2(saved, 2);
  ::close(saved);
  std::string s = slurp(f);
  std::fclose(f);
  return s;
}

void feed_lines(RankOutput& out, const std::vector<std::string>& lines) {
  for (const auto& l : lines) {
    std::string with_nl = l + "\n";
    out.feed(Stream::Err, with_nl.data(), with_nl.size());
  }
}

std::vector<std::string> tcpstore_warning() {
  std::vector<std::string> lines = {
      "[W1126 21:40:37.588420574 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=3): Broken pipe",
      "Exception raised from sendBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:757 (most recent call first):"};
  for (int i = 0; i < 11; ++i)
    lines.push_back("frame #" + std::to_string(i) + ": <unknown function> + 0x69c6812 (0x7f47 in libtorch_cpu.so)");
  lines.push_back("");
  lines.push_back("[rank 1] error: all_reduce of 24 bytes failed");
  return lines;
}

// Logs under `t`, teed to the console.
OutputOptions teed_logs(const TempDir& t) {
  OutputOptions opt;
  opt.log_dir = t.str() + "/logs";
  opt.tee = true;
  return opt;
}
}  // namespace

TEST_CASE("console: a C++ backtrace the log file keeps is one line on the console", "[launch][output]") {
  TempDir t;
  const OutputOptions opt = teed_logs(t);
  const std::string console = console_stderr([&] {
    RankOutput out(opt, "vm", 1, 1, "default", 0);
    feed_lines(out, tcpstore_warning());
    out.finish();
  });
  const std::string log = opt.log_dir + "/attempt_0/1/stderr.log";
  CHECK(console == "[vm:1] [W1126 21:40:37.588420574 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=3): "
                   "Broken pipe\n"
                   "[vm:1] [… 11 C++ stack frames left out: " + log + " has them]\n"
                   "[vm:1] [rank 1] error: all_reduce of 24 bytes failed\n");
  std::ifstream in(log);
  std::stringstream text;
  text << in.rdbuf();
  std::string expected;
  for (const auto& l : tcpstore_warning()) expected += l + "\n";
  CHECK(text.str() == expected);  // the file keeps every line
}

TEST_CASE("console: a backtrace at the end of the output is folded at EOF, a lone header is kept", "[launch][output]") {
  TempDir t;
  const OutputOptions opt = teed_logs(t);
  const std::string console = console_stderr([&] {
    RankOutput out(opt, "h", 0, 0, "default", 0);
    feed_lines(out, {"Exception raised from f at a.cpp:1 (most recent call first):", "not a frame",
                     "frame #0: g + 0x1 (0x7f in lib.so)", "frame #1: h + 0x1 (0x7f in lib.so)"});
    out.feed(Stream::Err, "frame #2: i + 0x1 (0x7f in lib.so)", 34);  // no newline: EOF ends it
    out.finish();
  });
  CHECK(console == "[h:0] Exception raised from f at a.cpp:1 (most recent call first):\n"
                   "[h:0] not a frame\n"
                   "[h:0] [… 3 C++ stack frames left out: " + opt.log_dir + "/attempt_0/0/stderr.log has them]\n");
}

TEST_CASE("console: without a log file the backtrace is folded too, and says how to keep it", "[launch][output]") {
  OutputOptions opt;  // no log_dir
  const std::string console = console_stderr([&] {
    RankOutput out(opt, "vm", 1, 1, "default", 0);
    feed_lines(out, tcpstore_warning());
    out.finish();
  });
  CHECK(console == "[vm:1] [W1126 21:40:37.588420574 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=3): "
                   "Broken pipe\n"
                   "[vm:1] [… 11 C++ stack frames left out: --log-dir DIR has them] (a rank's whole output)\n"
                   "[vm:1] [rank 1] error: all_reduce of 24 bytes failed\n");
}

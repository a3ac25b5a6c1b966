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

#include "captured.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/launch/output.hpp"
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

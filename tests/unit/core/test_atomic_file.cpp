// Files replaced whole (lib/core/atomic_file.cpp): content and mode exact, a planted link replaced
// and never followed, the modification time stamped, and on failure the target untouched and no
// temporary left beside it.
#include <catch2/catch.hpp>

#include <sys/resource.h>
#include <sys/stat.h>
#include <csignal>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "lib/core/atomic_file.hpp"
#include "temp_dir.hpp"

using mtrain::AtomicWrite;
using mtrain::replace_file_atomically;
using mtrain::testing::TempDir;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  return {std::istreambuf_iterator<char>(f), {}};
}
size_t entries(const fs::path& dir) {
  return static_cast<size_t>(std::distance(fs::directory_iterator(dir), fs::directory_iterator()));
}
}  // namespace

TEST_CASE("atomic_file: the text and mode exactly, replaced whole, a planted link not followed",
          "[core][atomic_file]") {
  TempDir d("mtrain_atomic");
  const std::string path = (d.path / "job.json").string();
  REQUIRE(replace_file_atomically(path, "{\"a\": 1}\n", {0600}) == 0);
  CHECK(slurp(path) == "{\"a\": 1}\n");
  CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  REQUIRE(replace_file_atomically(path, "second", {0640}) == 0);
  CHECK(slurp(path) == "second");
  CHECK((fs::status(path).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));
  REQUIRE(replace_file_atomically(path, "", {0644, /*sync=*/true}) == 0);
  CHECK(slurp(path).empty());
  CHECK(entries(d.path) == 1);  // no temporary left beside it

  // A link planted at the target (or at a predictable temporary's name) is never written through.
  const fs::path target = d.path / "target";
  std::ofstream(target) << "untouched";
  const std::string link = (d.path / "link.json").string();
  fs::create_symlink(target, link);
  fs::create_symlink(target, link + ".tmp");
  REQUIRE(replace_file_atomically(link, "new") == 0);
  CHECK_FALSE(fs::is_symlink(link));
  CHECK(slurp(link) == "new");
  CHECK(slurp(target) == "untouched");
}

TEST_CASE("atomic_file: the modification time is the one given", "[core][atomic_file]") {
  TempDir d("mtrain_atomic");
  const std::string path = (d.path / "error.json").string();
  const auto when =
      std::chrono::system_clock::time_point(std::chrono::seconds(1700000000) + std::chrono::nanoseconds(123456789));
  AtomicWrite how;
  how.mtime = when;
  REQUIRE(replace_file_atomically(path, "x", how) == 0);
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK(st.st_mtim.tv_sec == 1700000000);
  CHECK(st.st_mtim.tv_nsec == 123456789);
}

TEST_CASE("atomic_file: a failure says why, leaves the target as it was and no temporary", "[core][atomic_file]") {
  TempDir d("mtrain_atomic");
  CHECK(replace_file_atomically((d.path / "no" / "f").string(), "x") == ENOENT);
  // The rename fails (the target is a non-empty directory): the temporary goes, the directory stays.
  fs::create_directories(d.path / "dir" / "inside");
  CHECK(replace_file_atomically((d.path / "dir").string(), "x") != 0);
  CHECK(fs::is_directory(d.path / "dir" / "inside"));
  CHECK(entries(d.path) == 1);
  // A write that fails part-way (the file-size limit: EFBIG once SIGXFSZ is ignored), as a full
  // disk would: nothing is renamed over the target.
  const fs::path old = d.path / "old";
  std::ofstream(old) << "old";
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_FSIZE, &saved) == 0);
  const auto previous = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit tiny = saved;
  tiny.rlim_cur = 4;
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &tiny) == 0);
  const int err = replace_file_atomically(old.string(), "longer than four bytes");
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, previous);
  CHECK(err == EFBIG);
  CHECK(slurp(old) == "old");
  CHECK(entries(d.path) == 2);
}

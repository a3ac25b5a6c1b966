// One live launcher per run folder (lib/launch/run_folder_lock.cpp): the flock is exclusive (a
// second holder, even in this process, is refused naming the first), it goes with its holder,
// and job files are replaced atomically without following a planted link.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "lib/core/error.hpp"
#include "lib/launch/run_folder_lock.hpp"
#include "temp_dir.hpp"

using namespace mtrain::launch;
using mtrain::testing::TempDir;
namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
}  // namespace

TEST_CASE("run_folder_lock: a second launcher of the folder is refused, naming the holder", "[launch][run_folder_lock]") {
  TempDir d("mtrain_run_lock");
  std::optional<RunFolderLock> first;
  first.emplace(d.str(), "job-1");
  const std::string holder = slurp(d.path / "launcher.lock");
  CHECK_THAT(holder, Catch::StartsWith("held by host ") && Catch::Contains("pid " + std::to_string(::getpid())));
  try {
    RunFolderLock second(d.str(), "job-1");
    FAIL("a second lock was taken");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    CHECK_THAT(e.paragraph(), Catch::Contains("job job-1 already has a live launcher writing to " + d.str()) &&
                                  Catch::Contains("pid " + std::to_string(::getpid())) &&
                                  Catch::Contains("--job-id"));
  }
  // The lock goes with its holder; the file stays and names the next one.
  first.reset();
  CHECK(fs::exists(d.path / "launcher.lock"));
  CHECK_NOTHROW(RunFolderLock(d.str(), "job-1"));
}

TEST_CASE("run_folder_lock: a folder that cannot hold the lock is named", "[launch][run_folder_lock]") {
  TempDir d("mtrain_run_lock");
  CHECK_THROWS_WITH(RunFolderLock((d.path / "missing").string(), "j"),
                    Catch::Contains("cannot open the run folder's lock") && Catch::Contains("missing/launcher.lock"));
  // A link planted as the lock file is not followed.
  fs::create_symlink(d.path / "elsewhere", d.path / "launcher.lock");
  CHECK_THROWS_WITH(RunFolderLock(d.str(), "j"), Catch::Contains("cannot open the run folder's lock"));
  CHECK_FALSE(fs::exists(d.path / "elsewhere"));
}

TEST_CASE("run_folder_lock: files are replaced whole, with their mode, links replaced not followed",
          "[launch][run_folder_lock]") {
  TempDir d("mtrain_run_lock");
  const std::string path = (d.path / "job.json").string();
  write_file_atomically(path, "{\"a\": 1}\n", 0600);
  CHECK(slurp(path) == "{\"a\": 1}\n");
  CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
  write_file_atomically(path, "second", 0640);
  CHECK(slurp(path) == "second");
  CHECK((fs::status(path).permissions() & fs::perms::all) ==
        (fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read));

  // A leftover of a dead launcher at a predictable temporary name is neither followed nor needed.
  std::ofstream(path + ".tmp." + std::to_string(::getpid())) << "stale";
  write_file_atomically(path, "third", 0600);
  CHECK(slurp(path) == "third");

  const fs::path target = d.path / "target";
  std::ofstream(target) << "untouched";
  const std::string link = (d.path / "link.json").string();
  fs::create_symlink(target, link);
  write_file_atomically(link, "new", 0600);
  CHECK_FALSE(fs::is_symlink(link));
  CHECK(slurp(link) == "new");
  CHECK(slurp(target) == "untouched");

  CHECK_THROWS_WITH(write_file_atomically((d.path / "no" / "f").string(), "x", 0600), Catch::Contains("cannot write"));
}

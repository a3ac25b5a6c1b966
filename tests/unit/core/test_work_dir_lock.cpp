#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "lib/core/error.hpp"
#include "lib/core/work_dir_lock.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string this_host() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

using mtrain::testing::TempDir;

void plant(const fs::path& dir, const std::string& host, long pid) {
  std::ofstream(dir / ".mtrain.lock") << mtrain::holder_text({"ghost", host, "2026-01-01T00:00:00Z", pid});
}

// The Error's paragraph, or "" when the call returned.
template <class F>
std::string refusal(F&& f) {
  try {
    f();
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == 2);
    return e.paragraph();
  }
  return "";
}

}  // namespace

TEST_CASE("decide_lock: a held flock refuses, dead or silent holders are taken over", "[core][work_dir_lock]") {
  const mtrain::LockHolder here{"J", "h1", "T", 42};
  const mtrain::LockHolder there{"J", "h2", "T", 42};
  CHECK_FALSE(mtrain::decide_lock(mtrain::FlockState::Held, here, "h1", true, 0s, 30s).take);
  CHECK(mtrain::decide_lock(mtrain::FlockState::Got, std::nullopt, "h1", false, 0s, 30s).take);
  auto d = mtrain::decide_lock(mtrain::FlockState::Got, here, "h1", true, 0s, 30s);
  CHECK(d.take);
  CHECK(d.notice.find("no longer running") != std::string::npos);
  CHECK_FALSE(mtrain::decide_lock(mtrain::FlockState::Unsupported, here, "h1", true, 0s, 30s).take);
  CHECK(mtrain::decide_lock(mtrain::FlockState::Unsupported, here, "h1", false, 0s, 30s).take);
  CHECK_FALSE(mtrain::decide_lock(mtrain::FlockState::Got, there, "h1", true, 5s, 30s).take);
  d = mtrain::decide_lock(mtrain::FlockState::Got, there, "h1", true, 600s, 30s);
  CHECK(d.take);
  CHECK(d.notice.find("heartbeat stopped") != std::string::npos);
}

TEST_CASE("check_work_dir_free: the launcher's probe refuses a live holder and changes nothing",
          "[core][work_dir_lock]") {
  TempDir t;
  const std::string wd = t.path.string();
  SECTION("no lock file: quiet, and none is created") {
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd); }).empty());
    CHECK_FALSE(fs::exists(t.path / ".mtrain.lock"));
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd + "/not-yet"); }).empty());
    CHECK_FALSE(fs::exists(t.path / "not-yet"));
  }
  SECTION("held by a live job (this process, through WorkDirLock): refused, naming it") {
    auto lock = mtrain::WorkDirLock::acquire(wd, "jobA");
    const std::string msg = refusal([&] { mtrain::check_work_dir_free(wd); });
    CHECK(msg.find("is in use by job jobA (host " + this_host() + ", pid " + std::to_string(::getpid())) !=
          std::string::npos);
    // The probe's shared flock is gone: the holder's record is intact and a second acquire still
    // refuses for the same reason.
    CHECK_THROWS_AS(mtrain::WorkDirLock::acquire(wd, "jobB"), mtrain::Error);
  }
  SECTION("released: free again") {
    { auto lock = mtrain::WorkDirLock::acquire(wd, "jobA"); }
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd); }).empty());
  }
  SECTION("a dead holder on this host: quiet (rank 0 takes it over)") {
    plant(t.path, this_host(), 999999999);
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd); }).empty());
  }
  SECTION("another host, heartbeat fresh: refused; silent for 10 minutes: quiet") {
    plant(t.path, "other-node.example", 4242);
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd); }).find("job ghost (host other-node.example, pid 4242") !=
          std::string::npos);
    const struct timespec old[2] = {{::time(nullptr) - 600, 0}, {::time(nullptr) - 600, 0}};
    REQUIRE(::utimensat(AT_FDCWD, (t.path / ".mtrain.lock").c_str(), old, 0) == 0);
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd); }).empty());
  }
  SECTION("a FIFO at the name does not block the probe") {
    REQUIRE(::mkfifo((t.path / ".mtrain.lock").c_str(), 0600) == 0);
    CHECK(refusal([&] { mtrain::check_work_dir_free(wd); }).empty());
  }
}

// Opening files users name or download (lib/core/untrusted_file.cpp, issue 29): a FIFO opens at
// once and is refused as a FIFO (it hung open() before), a link to a device is named with its
// target, and "does not exist" is said only of a missing path.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "lib/core/error.hpp"
#include "lib/core/token_file.hpp"
#include "lib/core/untrusted_file.hpp"
#include "temp_dir.hpp"

using namespace mtrain::testing;
namespace fs = std::filesystem;

TEST_CASE("open_untrusted: regular files open, everything else is named", "[core][untrusted_file][hostile]") {
  TempDir dir("mtrain_untrusted");
  const std::string reg = dir.write("w.bin", "abcdef");
  std::string why;
  {
    const mtrain::UntrustedFile f = mtrain::open_untrusted(reg, &why);
    REQUIRE(f.fd() >= 0);
    CHECK(f.size() == 6);
    char b[3];
    CHECK(f.pread_exact(b, 3, 2));
    CHECK(std::string(b, 3) == "cde");
    CHECK_FALSE(f.pread_exact(b, 3, 5));  // past the end: a short read is a failure
  }
  const std::string fifo = (dir.path / "fifo").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(mtrain::open_untrusted(fifo, &why).fd() < 0);  // must not block: no writer exists
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(why == "is a FIFO (named pipe), not a regular file");

  fs::create_symlink("/dev/zero", dir.path / "zero");
  CHECK(mtrain::open_untrusted((dir.path / "zero").string(), &why).fd() < 0);
  CHECK(why == "is a symbolic link to /dev/zero (a character device), not a regular file");

  CHECK(mtrain::open_untrusted(dir.str(), &why).fd() < 0);
  CHECK(why == "is a folder, not a regular file");
  CHECK(mtrain::open_untrusted((dir.path / "missing").string(), &why).fd() < 0);
  CHECK(why == "does not exist");
  fs::create_symlink(dir.path / "gone", dir.path / "dangling");
  CHECK(mtrain::not_regular_file((dir.path / "dangling").string()) == "is a symbolic link to a missing file");
  CHECK(mtrain::not_regular_file(reg).empty());
}

TEST_CASE("token files: a FIFO or a device as data.path is refused at once, by what it is", "[core][token_file][hostile]") {
  TempDir dir("mtrain_token_fifo");
  const std::string fifo = (dir.path / "train.bin").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  // Before issue 29 this blocked in open() forever (the launcher's check hung).
  CHECK_THROWS_WITH(mtrain::read_token_file_layout(fifo, "data.path"),
                    Catch::Contains("data.path") && Catch::Contains(fifo) &&
                        Catch::Contains("is a FIFO (named pipe), not a regular file"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  fs::create_symlink("/dev/zero", dir.path / "zero.bin");
  CHECK_THROWS_WITH(mtrain::read_token_file_layout((dir.path / "zero.bin").string(), "data.path"),
                    Catch::Contains("symbolic link to /dev/zero (a character device)") &&
                        !Catch::Contains("does not exist"));
  try {
    mtrain::read_token_file_layout(fifo, "data.path");
  } catch (const mtrain::Error& e) {
    CHECK(e.exit_code() == mtrain::kExitUsage);
  }
}

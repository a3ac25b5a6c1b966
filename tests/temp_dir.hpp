#pragma once
// A fresh folder under the system temp dir for one test, removed with everything in it when the
// test ends. The name holds the pid and a counter, so tests of parallel ctest runs never share one.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

namespace mtrain::testing {

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "mtrain_test") {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           (prefix + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace mtrain::testing

#pragma once
// A fresh folder under the system temp dir for one test, removed with everything in it when the
// test ends. The name holds the pid and a counter, so tests of parallel ctest runs never share one.
// The one temporary-folder fixture of every test binary (unit, e2e, fault tests).
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
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
    // Tests take permissions away (unreadable or unwritable folders): give the owner's back
    // first, each folder before the walk enters it, or remove_all could not empty them.
    namespace fs = std::filesystem;
    std::error_code ec, ignored;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ignored);
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->is_directory(ignored) && !it->is_symlink(ignored))
        fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ignored);
    }
    fs::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The folder as text, for tests that build paths as strings.
  std::string str() const { return path.string(); }

  // Writes `text` to `name` (relative to the folder; its folders are made) and returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    const std::filesystem::path p = path / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
};

// A fresh (emptied) folder `name` for a test, inside one folder per test process that is removed
// when the process exits: for helpers that hand folders out by name (the trainer tests' work dirs,
// whose checkpoints and exported models are hundreds of MB; a suite run leaves nothing in /tmp).
inline std::filesystem::path fresh_dir(const std::string& name) {
  static const TempDir root("mtrain_test_scratch");
  const std::filesystem::path d = root.path / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace mtrain::testing

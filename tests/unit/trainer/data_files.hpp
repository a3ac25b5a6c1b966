#pragma once
// Files for the dataset tests: a temporary folder removed afterwards, a file written from bytes,
// and the paragraph of the mtrain::Error a call throws.
#include "mtrain/core/error.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

namespace mtrain::trainer::testing {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("mtrain_data_test_" + std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline std::filesystem::path write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
  return p;
}

// "" when fn throws nothing.
inline std::string error_text(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const mtrain::Error& e) {
    return e.paragraph();
  }
  return "";
}

}  // namespace mtrain::trainer::testing

#pragma once
// Files for the dataset tests: a temporary folder removed afterwards, a file written from bytes,
// and the paragraph of the mtrain::Error a call throws.
#include "mtrain/core/error.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>

namespace mtrain::trainer::testing {

using ::mtrain::testing::TempDir;

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

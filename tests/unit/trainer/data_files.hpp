#pragma once
// Files for the dataset tests: a temporary folder removed afterwards, a file written from bytes,
// and the paragraph of the mtrain::Error a call throws (the shared fixtures of tests/).
#include "lib/core/error.hpp"
#include "error_text.hpp"
#include "temp_dir.hpp"

#include <filesystem>
#include <fstream>
#include <string>

namespace mtrain::trainer::testing {

using ::mtrain::testing::error_text;
using ::mtrain::testing::TempDir;

inline std::filesystem::path write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
  return p;
}

}  // namespace mtrain::trainer::testing

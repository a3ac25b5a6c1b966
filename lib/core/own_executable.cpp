#include "lib/core/own_executable.hpp"

#include <filesystem>
#include <system_error>

namespace mtrain {

std::string own_executable() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

}  // namespace mtrain

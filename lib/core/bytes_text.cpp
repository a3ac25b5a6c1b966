#include "lib/core/bytes_text.hpp"

#include <cmath>

#include <fmt/format.h>

namespace mtrain {

std::string human_bytes(double bytes, int decimals) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (std::abs(bytes) >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{:.0f} B", bytes);
  const int d = decimals >= 0 ? decimals : (std::abs(bytes) < 10 ? 2 : 1);
  return fmt::format("{:.{}f} {}", bytes, d, units[u]);
}

}  // namespace mtrain

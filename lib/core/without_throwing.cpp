#include "lib/core/without_throwing.hpp"

#include <cstdio>

namespace mtrain {

void warn_swallowed(const char* doing, const char* what) noexcept {
  std::fprintf(stderr, "mtrain: warning: %s failed: %s\n", doing, what);
}

}  // namespace mtrain

#include "console.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::app {

void print_stdout(const std::string& text) {
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0 ||
      std::ferror(stdout)) {
    const int e = errno ? errno : EIO;
    throw RuntimeFailure(fmt::format("cannot write to standard output: {}", std::strerror(e)),
                         "Check where the output goes (a full disk, a closed pipe).");
  }
}

void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::fprintf(stderr, "mtrain: warning: %s\n", w.c_str());
}

}  // namespace mtrain::app

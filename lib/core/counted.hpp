#pragma once
// "1 rank", "2 ranks": a count with its noun, singular for one. For the regular English plurals
// of the launcher's and trainer's messages (rank, thread, node, step, segment).
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace mtrain {

inline std::string counted(long long n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace mtrain

#include "lib/launch/stderr_tail.hpp"

#include <cctype>

#include <fmt/format.h>

namespace mtrain::launch {

namespace {
constexpr std::string_view kFoldPrefix = "[… ";
constexpr std::string_view kFoldSuffix = " C++ stack frames left out: the rank's stderr has them]";

// The count in a fold line, or 0 if `line` is not one.
std::size_t folded(const std::string& line) {
  if (line.rfind(kFoldPrefix, 0) != 0 || line.size() <= kFoldPrefix.size() + kFoldSuffix.size() ||
      line.compare(line.size() - kFoldSuffix.size(), kFoldSuffix.size(), kFoldSuffix) != 0)
    return 0;
  std::size_t n = 0;
  for (std::size_t i = kFoldPrefix.size(); i < line.size() - kFoldSuffix.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(line[i]))) return 0;
    n = n * 10 + static_cast<std::size_t>(line[i] - '0');
  }
  return n;
}
}  // namespace

bool is_stack_frame(std::string_view line) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos || line.compare(i, 7, "frame #") != 0) return false;
  i += 7;
  std::size_t digits = i;
  while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
  return i > digits && i < line.size() && line[i] == ':';
}

bool is_backtrace_header(std::string_view line) {
  constexpr std::string_view head = "Exception raised from ", tail = "(most recent call first):";
  const std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string_view::npos) return false;
  line.remove_prefix(i);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.remove_suffix(1);
  return line.size() > head.size() + tail.size() && line.compare(0, head.size(), head) == 0 &&
         line.compare(line.size() - tail.size(), tail.size(), tail) == 0;
}

std::string console_fold_line(std::size_t frames, const std::string& log_file) {
  return fmt::format("{}{} C++ stack frames left out: {} has them]", kFoldPrefix, frames, log_file);
}

void push_tail_line(std::deque<std::string>& tail, std::size_t limit, const std::string& line) {
  if (is_stack_frame(line)) {
    if (std::size_t n = tail.empty() ? 0 : folded(tail.back())) {
      tail.back() = fmt::format("{}{}{}", kFoldPrefix, n + 1, kFoldSuffix);
      return;
    }
    tail.push_back(fmt::format("{}1{}", kFoldPrefix, kFoldSuffix));
  } else {
    tail.push_back(line);
  }
  while (tail.size() > limit) tail.pop_front();
}

}  // namespace mtrain::launch

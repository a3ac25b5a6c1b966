#include "lib/trainer/loop/console.hpp"

#include <fmt/format.h>

#include <cmath>

namespace mtrain::trainer {

std::string format_eta(double seconds) {
  const auto s = static_cast<int64_t>(std::max(0.0, std::round(seconds)));
  return fmt::format("{}:{:02d}:{:02d}", s / 3600, (s / 60) % 60, s % 60);
}

std::string position_prefix(const std::string& mode, const Position& p) {
  const int width = static_cast<int>(std::to_string(p.total).size());
  if (p.by_epochs) {
    return fmt::format("Epoch({}) [{}][{:>{}}/{}]", mode, p.epoch, p.iter, width, p.total);
  }
  return fmt::format("Iter({}) [{:>{}}/{}]", mode, p.iter, width, p.total);
}

std::string format_line(const std::string& prefix,
                        const std::vector<std::pair<std::string, std::string>>& fields) {
  std::string s = prefix;
  for (const auto& [k, v] : fields) s += fmt::format("  {}: {}", k, v);
  return s;
}

void Console::clear_bar() {
  if (bar_shown_) {
    out_ << "\r\033[K";
    bar_shown_ = false;
  }
}

void Console::line(const std::string& text) {
  if (!enabled_) return;
  clear_bar();
  out_ << text << '\n';
  out_.flush();
}

void Console::progress(int64_t done, int64_t total) {
  if (!enabled_ || !bar_ || total <= 0) return;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * done / total);
  out_ << '\r' << '[' << std::string(filled, '=') << (filled < kWidth ? ">" : "")
       << std::string(std::max(0, kWidth - filled - 1), ' ') << "] " << done << '/' << total;
  out_.flush();
  bar_shown_ = true;
}

}  // namespace mtrain::trainer

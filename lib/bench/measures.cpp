#include "lib/bench/measures.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::bench {

int64_t parse_size(const std::string& text, const std::string& flag) {
  std::string t = str::trim(text);
  size_t digits = 0;
  while (digits < t.size() && std::isdigit(static_cast<unsigned char>(t[digits]))) ++digits;
  std::string unit = str::to_upper(t.substr(digits));
  if (unit.size() == 3 && unit.substr(1) == "IB") unit = unit.substr(0, 1);
  if (unit == "B") unit = "";
  int shift = -1;
  if (unit.empty()) shift = 0;
  else if (unit == "K") shift = 10;
  else if (unit == "M") shift = 20;
  else if (unit == "G") shift = 30;
  auto n = str::parse_uint(t.substr(0, digits));
  if (digits == 0 || !n || shift < 0 || *n < 1 || *n > (1ll << (62 - shift)))
    throw Error(fmt::format("{} '{}' is not a size", flag, text), "Write bytes like 4096, 1K, 64M or 1G (binary units).");
  return static_cast<int64_t>(*n) << shift;
}

std::string format_size(int64_t b) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && b >= 1024 && b % 1024 == 0) {
    b /= 1024;
    ++u;
  }
  return std::to_string(b) + units[u];
}

std::vector<int64_t> size_sweep(int64_t min_bytes, int64_t max_bytes) {
  if (min_bytes < 1 || max_bytes < min_bytes)
    throw Error(fmt::format("--min-bytes {} is larger than --max-bytes {}", format_size(min_bytes), format_size(max_bytes)),
                "Give --min-bytes <= --max-bytes.");
  std::vector<int64_t> out;
  for (int64_t s = min_bytes; s <= max_bytes; s *= 2) {
    out.push_back(s);
    if (s > max_bytes / 2) break;
  }
  return out;
}

std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int min) {
  std::vector<int> out;
  for (const auto& part : str::split(text, ',')) {
    auto v = str::parse_uint(str::trim(part));
    if (!v || *v < min || *v > 1 << 20)
      throw Error(fmt::format("{} '{}': '{}' is not a whole number >= {}", flag, text, part, min),
                  "Give a comma-separated list such as 1,2,4.");
    out.push_back(static_cast<int>(*v));
  }
  if (out.empty()) throw Error(fmt::format("{} is empty", flag), "Give a comma-separated list such as 1,2,4.");
  return out;
}

double bus_factor(const std::string& op, int n) {
  if (n < 1) throw std::invalid_argument("world size must be positive");
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") return static_cast<double>(n - 1) / n;
  if (op == "broadcast" || op == "reduce") return 1.0;
  return 0.0;  // barrier: no payload
}

double algbw_gbps(double bytes, double seconds) { return seconds > 0 ? bytes / seconds / 1e9 : 0.0; }

double busbw_gbps(const std::string& op, int world, double bytes, double seconds) {
  return algbw_gbps(bytes, seconds) * bus_factor(op, world);
}

Summary summarize(std::vector<double> xs) {
  if (xs.empty()) throw std::invalid_argument("summarize: no samples");
  std::sort(xs.begin(), xs.end());
  Summary s;
  s.n = xs.size();
  s.min = xs.front();
  s.max = xs.back();
  s.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / s.n;
  s.median = s.n % 2 ? xs[s.n / 2] : (xs[s.n / 2 - 1] + xs[s.n / 2]) / 2;
  double ss = 0;
  for (double x : xs) ss += (x - s.mean) * (x - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(ss / (s.n - 1)) : 0.0;
  return s;
}

}  // namespace mtrain::bench

#include "lib/config/slurm_time.hpp"

#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "lib/core/strings.hpp"

namespace mtrain::config {

namespace {

// a * b + c without overflow, or nothing.
std::optional<long long> mul_add(long long a, long long b, long long c) {
  constexpr long long kMax = std::numeric_limits<long long>::max();
  if (a > (kMax - c) / b) return std::nullopt;
  return a * b + c;
}

}  // namespace

SlurmTime read_slurm_time(const std::string& t) {
  SlurmTime r;
  if (t.empty() || t == "UNLIMITED" || t == "INFINITE" || t == "unlimited" || t == "infinite") return r;
  std::string rest = t;
  std::optional<long long> days;
  if (const auto dash = t.find('-'); dash != std::string::npos) {
    days = str::parse_uint(t.substr(0, dash));
    if (!days) {
      r.problem = "days before '-' must be a number";
      return r;
    }
    rest = t.substr(dash + 1);
  }
  const auto fields = str::split(rest, ':');
  std::vector<long long> p;
  for (const auto& f : fields)
    if (const auto v = str::parse_uint(f)) p.push_back(*v);
  if (p.empty() || p.size() != fields.size() || p.size() > 3) {
    r.problem = "not a Slurm time limit (minutes, HH:MM:SS or D-HH:MM:SS)";
    return r;
  }
  // Days, hours, minutes, seconds. After D- Slurm reads hours first; without days one field is
  // minutes, two are M:S, three H:M:S.
  std::vector<long long> dhms;
  if (days) {
    dhms = {*days, p[0], p.size() > 1 ? p[1] : 0, p.size() > 2 ? p[2] : 0};
  } else if (p.size() == 1) {
    dhms = {0, 0, p[0], 0};
  } else if (p.size() == 2) {
    dhms = {0, 0, p[0], p[1]};
  } else {
    dhms = {0, p[0], p[1], p[2]};
  }
  std::optional<long long> s = dhms[0];
  for (auto [unit, add] : {std::pair{24LL, dhms[1]}, std::pair{60LL, dhms[2]}, std::pair{60LL, dhms[3]}})
    if (s) s = mul_add(*s, unit, add);
  if (!s) {
    r.problem = "the time limit is too large";
    return r;
  }
  r.seconds = *s;
  return r;
}

}  // namespace mtrain::config

#include "lib/core/strings.hpp"

#include <algorithm>
#include <cctype>
#include <limits>

namespace mtrain::str {

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) break;
    start = pos + 1;
  }
  return out;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool ends_with(std::string_view s, std::string_view x) {
  return s.size() >= x.size() && s.substr(s.size() - x.size()) == x;
}

std::string to_upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::optional<long long> parse_uint(std::string_view s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  long long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  // Three rows: a swap of two neighbours ("fdsp" for "fsdp") is one typo, not two, or a
  // two-substitution candidate ("ddp") would tie with it and win by coming first.
  std::vector<size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) cur[j] = std::min(cur[j], before[j - 2] + 1);
    }
    std::swap(before, prev);
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::optional<std::string> closest(std::string_view word, const std::vector<std::string>& candidates) {
  size_t best = std::numeric_limits<size_t>::max();
  const std::string* pick = nullptr;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best) best = d, pick = &c;
  }
  // Allow roughly one typo per three characters; farther than that is not a suggestion.
  if (!pick || best > std::max<size_t>(2, word.size() / 3)) return std::nullopt;
  return *pick;
}

std::string shell_quote(std::string_view arg) {
  if (!arg.empty() && std::all_of(arg.begin(), arg.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./_-").find(c) != std::string_view::npos;
      }))
    return std::string(arg);
  // Single quotes make everything literal; a literal single quote becomes '\''.
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  out += '\'';
  return out;
}

std::string shell_join(const std::vector<std::string>& argv) {
  std::vector<std::string> q;
  q.reserve(argv.size());
  for (const auto& a : argv) q.push_back(shell_quote(a));
  return join(q, " ");
}

std::optional<size_t> invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned lo = 0x80, hi = 0xbf;  // allowed range of the second byte
    if (b >= 0xc2 && b <= 0xdf) len = 2;
    else if (b == 0xe0) len = 3, lo = 0xa0;
    else if (b >= 0xe1 && b <= 0xec) len = 3;  // NOLINT(bugprone-branch-clone): RFC 3629 table rows
    else if (b == 0xed) len = 3, hi = 0x9f;  // no UTF-16 surrogates
    else if (b >= 0xee && b <= 0xef) len = 3;
    else if (b == 0xf0) len = 4, lo = 0x90;
    else if (b >= 0xf1 && b <= 0xf3) len = 4;
    else if (b == 0xf4) len = 4, hi = 0x8f;  // nothing above U+10FFFF
    else return i;
    if (i + len > s.size()) return i;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if (b1 < lo || b1 > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      const auto bk = static_cast<unsigned char>(s[i + k]);
      if (bk < 0x80 || bk > 0xbf) return i;
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace mtrain::str

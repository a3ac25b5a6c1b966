#include "lib/slurm/hostlist.hpp"

#include <cctype>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::slurm {

namespace {

// A hostlist this large is a typo ("n[1-100000000]"), not a cluster.
constexpr long long kMaxHosts = 1'000'000;
// Nor is one whose names add up to this many bytes: "<3000 characters>[000000-999999]" is within
// kMaxHosts but would need 3 GB (found by fuzz_slurm_hostlist; std::bad_alloc escaped).
constexpr size_t kMaxBytes = size_t{64} << 20;

const char* kHostHint =
    "A Slurm hostlist is comma-separated names with optional ranges in brackets, e.g. "
    "node[01-04,07],gpu-a[1-2]-ib";

Error bad(const std::string& list, size_t pos0, const std::string& problem) {
  return parse_error("hostlist", list, pos0 + 1, problem, kHostHint);
}

// One bracket group "01-04,07" starting at `open` (the '['): the numbers as strings with padding.
std::vector<std::string> expand_group(const std::string& list, size_t open, size_t close) {
  std::vector<std::string> out;
  size_t i = open + 1;
  if (i == close) throw bad(list, open, "empty brackets");
  while (i <= close) {
    size_t end = list.find_first_of(",]", i);  // end of this range item
    std::string item = list.substr(i, end - i);
    if (item.empty()) throw bad(list, i, "empty range (two commas or a comma next to a bracket)");
    size_t dash = item.find('-');
    std::string lo = item.substr(0, dash);
    std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    auto check_digits = [&](const std::string& s, size_t at) {
      if (s.empty()) throw bad(list, at, "a range needs a number on both sides of '-'");
      for (size_t k = 0; k < s.size(); ++k)
        if (!std::isdigit(static_cast<unsigned char>(s[k])))
          throw bad(list, at + k,
                    s[k] == '[' ? "brackets cannot be nested" : fmt::format("'{}' is not a digit", s[k]));
    };
    check_digits(lo, i);
    check_digits(hi, dash == std::string::npos ? i : i + dash + 1);
    if (lo.size() > 18 || hi.size() > 18) throw bad(list, i, "number too large");
    long long a = *str::parse_uint(lo), b = *str::parse_uint(hi);
    if (b < a) throw bad(list, i, fmt::format("range {}-{} runs backwards", lo, hi));
    if (b - a + 1 + static_cast<long long>(out.size()) > kMaxHosts)
      throw bad(list, i, fmt::format("range expands to more than {} names", kMaxHosts));
    // Slurm pads to the width of the lower bound as written: 08-10 → 08 09 10; 8-10 → 8 9 10.
    int width = static_cast<int>(lo.size());
    for (long long v = a; v <= b; ++v) out.push_back(fmt::format("{:0{}d}", v, width));
    i = end + 1;
  }
  return out;
}

// One host expression without top-level commas: literal text and bracket groups; the groups
// multiply (cartesian product, leftmost slowest), as Slurm does for multi-dimensional names.
void expand_one(const std::string& list, size_t begin, size_t end, std::vector<std::string>& out,
                size_t& out_bytes) {
  std::vector<std::string> acc{""};
  size_t acc_bytes = 0;  // sum of the lengths in acc
  auto check_bytes = [&](size_t bytes, size_t at) {
    if (bytes + out_bytes > kMaxBytes)
      throw bad(list, at, fmt::format("hostlist expands to more than {} MiB of names", kMaxBytes >> 20));
  };
  size_t i = begin;
  while (i < end) {
    if (list[i] == '[') {
      size_t close = list.find(']', i);
      if (close == std::string::npos || close >= end) throw bad(list, i, "'[' is never closed");
      size_t nested = list.find('[', i + 1);
      if (nested < close) throw bad(list, nested, "brackets cannot be nested");
      auto parts = expand_group(list, i, close);
      if (static_cast<long long>(acc.size()) * static_cast<long long>(parts.size()) > kMaxHosts)
        throw bad(list, i, fmt::format("hostlist expands to more than {} names", kMaxHosts));
      size_t parts_bytes = 0;
      for (const auto& p : parts) parts_bytes += p.size();
      const size_t next_bytes = acc_bytes * parts.size() + parts_bytes * acc.size();
      check_bytes(next_bytes, i);
      acc_bytes = next_bytes;
      std::vector<std::string> next;
      next.reserve(acc.size() * parts.size());
      for (const auto& prefix : acc)
        for (const auto& p : parts) next.push_back(prefix + p);
      acc.swap(next);
      i = close + 1;
    } else if (list[i] == ']') {
      throw bad(list, i, "']' without a matching '['");
    } else {
      unsigned char c = static_cast<unsigned char>(list[i]);
      if (std::isspace(c) || std::iscntrl(c)) throw bad(list, i, "host names cannot contain spaces");
      acc_bytes += acc.size();
      check_bytes(acc_bytes, i);
      for (auto& a : acc) a += list[i];
      ++i;
    }
  }
  if (out.size() + acc.size() > static_cast<size_t>(kMaxHosts))
    throw bad(list, begin, fmt::format("hostlist expands to more than {} names", kMaxHosts));
  out.insert(out.end(), acc.begin(), acc.end());
  out_bytes += acc_bytes;
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  size_t out_bytes = 0;
  if (str::trim(list).empty()) throw Error("empty hostlist", kHostHint);
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    char c = i < list.size() ? list[i] : ',';
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (c == ',' && (depth <= 0 || i == list.size())) {
      if (i == start) throw bad(list, i < list.size() ? i : (i ? i - 1 : 0), "empty host name");
      expand_one(list, start, i, out, out_bytes);
      start = i + 1;
      depth = 0;
    }
  }
  return out;
}

std::vector<int> expand_counts(const std::string& list, const std::string& what) {
  std::vector<int> out;
  const std::string hint = "Slurm writes per-node counts as N or N(xREPEAT), comma-separated, e.g. 2(x3),1";
  size_t i = 0;
  if (list.empty()) throw Error("empty " + what, hint);
  while (i <= list.size()) {
    size_t end = list.find(',', i);
    if (end == std::string::npos) end = list.size();
    std::string item = list.substr(i, end - i);
    size_t paren = item.find('(');
    std::string count = item.substr(0, paren);
    auto n = str::parse_uint(count);
    if (!n || *n > 1'000'000) throw parse_error(what, list, i + 1, "expected a count", hint);
    long long repeat = 1;
    if (paren != std::string::npos) {
      if (item.size() < paren + 4 || item.compare(paren, 2, "(x") != 0 || item.back() != ')')
        throw parse_error(what, list, i + paren + 1, "expected (xREPEAT)", hint);
      auto r = str::parse_uint(item.substr(paren + 2, item.size() - paren - 3));
      if (!r || *r == 0 || *r > 1'000'000)
        throw parse_error(what, list, i + paren + 3, "expected a repeat count", hint);
      repeat = *r;
    }
    // A count list describes nodes: as many entries as a hostlist may have names, at most.
    if (static_cast<long long>(out.size()) + repeat > kMaxHosts)
      throw parse_error(what, list, i + 1, fmt::format("expands to more than {} entries", kMaxHosts), hint);
    for (long long k = 0; k < repeat; ++k) out.push_back(static_cast<int>(*n));
    if (end == list.size()) break;
    i = end + 1;
  }
  return out;
}

}  // namespace mtrain::slurm

#include "lib/core/index_list.hpp"

#include <optional>
#include <set>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain {

namespace {

std::optional<int> index_of(const std::string& s) {
  auto v = str::parse_uint(s);
  if (!v || *v > kMaxIndex) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

IndexListReading read_index_list(const std::string& text, const std::string& noun, IndexRanges ranges) {
  IndexListReading r;
  auto fail = [&](size_t column, std::string problem) {
    r.ids.clear();
    r.problem = std::move(problem);
    r.column = column;
    return r;
  };
  if (str::trim(text).empty()) return fail(1, "the list is empty");
  std::set<int> seen;
  auto add = [&](int id) {
    if (seen.insert(id).second) r.ids.push_back(id);
  };
  size_t col = 1;
  for (const auto& raw : str::split(text, ',')) {
    const std::string field = str::trim(raw);
    const size_t lead = raw.find_first_not_of(" \t");
    const size_t at = col + (lead == std::string::npos ? 0 : lead);
    col += raw.size() + 1;
    if (field.empty()) return fail(at, fmt::format("empty {}", noun));
    const size_t dash = field.find('-', 1);  // a leading '-' is a sign, not a range
    if (ranges == IndexRanges::No || dash == std::string::npos) {
      auto id = index_of(field);
      if (!id) return fail(at, fmt::format("'{}' is not a {}", field, noun));
      add(*id);
      continue;
    }
    auto lo = index_of(str::trim(field.substr(0, dash)));
    auto hi = index_of(str::trim(field.substr(dash + 1)));
    if (!lo || !hi) return fail(at, fmt::format("'{}' is not a {} or a range like 0-3", field, noun));
    if (*lo > *hi) return fail(at, fmt::format("the range '{}' runs backwards", field));
    for (int id = *lo; id <= *hi; ++id) add(id);
  }
  return r;
}

IndexListReading read_index_selection(const std::string& text, const std::string& noun) {
  const std::string t = str::trim(text);
  if (t.empty() || t == "all") return {};
  return read_index_list(text, noun);
}

static std::vector<int> thrown(const IndexListReading& r, const std::string& text, const std::string& what,
                               const std::string& noun, IndexRanges ranges) {
  if (!r.problem.empty())
    throw parse_error(what, text, r.column, r.problem,
                      fmt::format("Give {}s (whole numbers from 0) separated by commas, such as 0,1,3{}.", noun,
                                  ranges == IndexRanges::Yes ? " or 0-3" : ""));
  return r.ids;
}

std::vector<int> parse_index_list(const std::string& text, const std::string& what, const std::string& noun,
                                  IndexRanges ranges) {
  return thrown(read_index_list(text, noun, ranges), text, what, noun, ranges);
}

std::vector<int> parse_index_selection(const std::string& text, const std::string& what, const std::string& noun) {
  return thrown(read_index_selection(text, noun), text, what, noun, IndexRanges::Yes);
}

}  // namespace mtrain

#include "lib/core/node_count.hpp"

#include <fmt/format.h>

#include <type_traits>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain {

NodeCountReading read_nnodes(const std::string& text) {
  NodeCountReading r;
  auto number = [&](const std::string& s, size_t col, int& out) {
    auto v = str::parse_uint(s);
    if (v && *v >= 1 && *v <= static_cast<std::decay_t<decltype(*v)>>(kMaxNodes)) {
      out = static_cast<int>(*v);
      return true;
    }
    r.problem = s.empty() ? std::string("missing node count")
                          : fmt::format("'{}' is not a node count (1 to {})", s, kMaxNodes);
    r.column = col;
    return false;
  };
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    if (number(text, 1, r.count.min)) r.count.max = r.count.min;
    return r;
  }
  if (!number(text.substr(0, colon), 1, r.count.min) || !number(text.substr(colon + 1), colon + 2, r.count.max)) return r;
  if (r.count.min > r.count.max) {
    r.problem = fmt::format("MIN {} is larger than MAX {}", r.count.min, r.count.max);
    r.column = 1;
  }
  return r;
}

NodeCount parse_nnodes(const std::string& text, const std::string& what) {
  const auto r = read_nnodes(text);
  if (!r.problem.empty())
    throw parse_error(what, text, r.column, r.problem, "Write N (e.g. 2) or MIN:MAX (e.g. 2:4) with 1 <= MIN <= MAX.");
  return r.count;
}

}  // namespace mtrain

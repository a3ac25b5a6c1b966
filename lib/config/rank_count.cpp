#include "lib/config/rank_count.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

RankCountReading read_rank_count(std::string_view text) {
  if (auto k = parse_choice<RankCount::Kind>(text)) return {RankCount{*k, 0}, ""};
  const auto n = str::parse_uint(text);
  if (!n) return {std::nullopt, "not a count, auto, cpu or gpu"};
  if (*n < 1) return {std::nullopt, "at least one process per node"};
  if (*n > kMaxRanksPerNode) return {std::nullopt, fmt::format("at most {} processes per node", kMaxRanksPerNode)};
  return {RankCount::count(static_cast<int>(*n)), ""};
}

RankCount rank_count_from_text(std::string_view text, const std::string& key) {
  auto r = read_rank_count(text);
  if (!r.value)
    throw UsageError(fmt::format("'{}' is {}", text, r.problem), "Give a positive number, or auto, cpu or gpu.")
        .at(key);
  return *r.value;
}

std::string to_string(const RankCount& c) {
  return c.kind == RankCount::Kind::N ? std::to_string(c.n) : to_string(c.kind);
}

int ranks_per_node(const RankCount& c, int cores, int gpus) {
  switch (c.kind) {
    case RankCount::Kind::Auto: return gpus > 0 ? gpus : 1;
    case RankCount::Kind::Cpu: return std::max(1, cores);
    case RankCount::Kind::Gpu: return gpus;
    case RankCount::Kind::N: return c.n;
  }
  no_such_value(c.kind);
}

}  // namespace mtrain::config

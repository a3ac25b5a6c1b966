#pragma once
// launch.nproc_per_node, parsed once: a count, or auto / cpu / gpu (their names in ONE table,
// choice_table.hpp). ranks_per_node is the one rule that turns it into ranks on a host: the
// launch plan (lib/plan) and `mtrain estimate` (lib/estimate) both call it, with the cores and
// GPUs the launcher's host probe finds (lib/launch/host_probe.hpp), so an estimate is for the
// world the launch would start.
#include <optional>
#include <string>
#include <string_view>

#include "lib/config/choice_table.hpp"

namespace mtrain::config {

inline constexpr int kMaxRanksPerNode = 65536;

struct RankCount {
  enum class Kind { Auto, Cpu, Gpu, N };
  Kind kind = Kind::Auto;
  int n = 0;  // Kind::N only: 1..kMaxRanksPerNode

  static RankCount count(int ranks) { return {Kind::N, ranks}; }
  bool operator==(const RankCount& o) const { return kind == o.kind && n == o.n; }
  bool operator!=(const RankCount& o) const { return !(*this == o); }
};

// The keywords; Kind::N has no row (it is spelled as its number).
template <>
struct ChoiceTable<RankCount::Kind> {
  static constexpr const char* what = "rank count";
  static constexpr ChoiceRow<RankCount::Kind> rows[] = {
      {RankCount::Kind::Auto, "auto"}, {RankCount::Kind::Cpu, "cpu"}, {RankCount::Kind::Gpu, "gpu"}};
};

// Without throwing: `problem` is empty when `text` is a rank count, else what is wrong (the
// registry's check of launch.nproc_per_node says it).
struct RankCountReading {
  std::optional<RankCount> value;
  std::string problem;
};
RankCountReading read_rank_count(std::string_view text);

// Throws mtrain::Error (exit 2) naming `key` for text that is not a rank count.
RankCount rank_count_from_text(std::string_view text, const std::string& key);

std::string to_string(const RankCount& c);

// Ranks one host runs: a count as given; auto: one per GPU, else 1; cpu: one per usable core;
// gpu: one per GPU (0 when there is none: the caller that needs GPUs refuses). `gpus` are the
// GPUs the ranks may use there (CUDA_VISIBLE_DEVICES honoured, the selection applied).
int ranks_per_node(const RankCount& c, int cores, int gpus);

}  // namespace mtrain::config

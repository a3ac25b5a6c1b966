#pragma once
// The one grammar of a node count, --nnodes N or MIN:MAX (1 <= MIN <= MAX <= kMaxNodes): read by
// the launcher (rendezvous, Slurm) and by the registry's check of launch.nnodes alike.
#include <cstddef>
#include <string>

namespace mtrain {

inline constexpr int kMaxNodes = 100000;

struct NodeCount {
  int min = 1;
  int max = 1;
  bool elastic() const { return min != max; }
};

// Without throwing: `problem` is empty when `text` is a node count, else what is wrong, at the
// 1-based `column`.
struct NodeCountReading {
  NodeCount count;
  std::string problem;
  size_t column = 0;
};
NodeCountReading read_nnodes(const std::string& text);

// Throws mtrain::Error naming `what` and the column (parse_error).
NodeCount parse_nnodes(const std::string& text, const std::string& what = "--nnodes");

}  // namespace mtrain

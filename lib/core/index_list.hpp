#pragma once
// The one grammar of an index list as users write it: GPU ids (--gpus, launch.gpus) and ranks
// (--ranks-filter). Read by the launcher and by the registry's checks of those settings alike, so
// `mtrain config validate` accepts exactly what `mtrain launch` accepts, with the same words.
//
//   selection := "" | "all" | list          ("" and "all": every index; the list: just those)
//   list      := field ("," field)*          blanks around a field are ignored
//   field     := N | A "-" B                 0 <= N, A <= B <= kMaxIndex; duplicates collapse
//
// CUDA_VISIBLE_DEVICES is a different value with CUDA's own rules (no ranges, no "all"): it takes
// the list without ranges (IndexRanges::No).
#include <cstddef>
#include <string>
#include <vector>

namespace mtrain {

inline constexpr int kMaxIndex = 1 << 20;

enum class IndexRanges { No, Yes };

// Without throwing: `problem` is empty when `text` is a list, else what is wrong at the 1-based
// `column`. `noun` names one item in the problem ("GPU id", "rank").
struct IndexListReading {
  std::vector<int> ids;  // in the order given, each once
  std::string problem;
  size_t column = 0;
};
IndexListReading read_index_list(const std::string& text, const std::string& noun,
                                 IndexRanges ranges = IndexRanges::Yes);

// The selection form: "" or "all" read as an empty `ids` (every index).
IndexListReading read_index_selection(const std::string& text, const std::string& noun);

// Throwing forms: mtrain::Error naming `what` ("--gpus") and the column (parse_error).
std::vector<int> parse_index_list(const std::string& text, const std::string& what, const std::string& noun,
                                  IndexRanges ranges = IndexRanges::Yes);
std::vector<int> parse_index_selection(const std::string& text, const std::string& what, const std::string& noun);

}  // namespace mtrain

#pragma once
// The arithmetic of the benchmarks: sizes as people write them, summary statistics, and the
// nccl-tests bandwidths (docs/architecture.md §6):
//   algbw = bytes / time
//   busbw = algbw · 2(N−1)/N   all-reduce
//         = algbw · (N−1)/N    all-gather, reduce-scatter (bytes: the full world-sized buffer)
//         = algbw              broadcast
// so busbw compares with the link's bandwidth whatever the collective and the world size.
#include <cstdint>
#include <string>
#include <vector>

namespace mtrain::bench {

// "1K" / "1KiB" = 1024, "64M", "1G", "4096" (plain bytes). Throws mtrain::Error naming `flag`.
int64_t parse_size(const std::string& text, const std::string& flag);
// 1024 → "1K", 67108864 → "64M", 1000 → "1000" (exact binary units only).
std::string format_size(int64_t bytes);
// min, 2·min, 4·min … up to max (inclusive when max is reached exactly).
std::vector<int64_t> size_sweep(int64_t min_bytes, int64_t max_bytes);
// "1,2,4,8" → {1,2,4,8}; each at least `min`. Throws naming `flag`.
std::vector<int> parse_int_list(const std::string& text, const std::string& flag, int min);

double bus_factor(const std::string& op, int world);
double algbw_gbps(double bytes, double seconds);  // GB/s (1e9 bytes), as nccl-tests prints
double busbw_gbps(const std::string& op, int world, double bytes, double seconds);

struct Summary {
  size_t n = 0;
  double min = 0, max = 0, mean = 0, median = 0, stddev = 0;
};
// Throws std::invalid_argument on an empty sample.
Summary summarize(std::vector<double> xs);

}  // namespace mtrain::bench

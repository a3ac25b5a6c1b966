#pragma once
// The rank side of `mtrain bench comm`: `mtrain-worker bench-comm …` joins the group from the
// torchrun environment, times each collective at each size over the Communicator (the same
// c10d Gloo / NCCL path the strategies use), checks the result against values every rank can
// predict, and rank 0 writes one JSON file the launcher turns into the table.
//
// Protocol (argv after "bench-comm"):
//   --ops all_reduce,all_gather,reduce_scatter,broadcast,barrier  --sizes B1,B2,… (bytes)
//   --iters N --warmup W [--max-seconds S] --out FILE
// Output (rank 0): {"world", "backend", "device", "dtype", "results": [{"op", "bytes", "count",
//   "iters", "time_s" (mean per call, slowest rank), "max_error" (largest |x − expected| on any
//   rank)}]}. Sizes are rounded down to whole elements (and whole world-sized chunks for
//   all_gather / reduce_scatter); "bytes" is the size actually used.
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::trainer {

struct CommBenchArgs {
  std::vector<std::string> ops;
  std::vector<int64_t> sizes;
  int iters = 20;
  int warmup = 5;
  double max_seconds = 0;  // > 0: fewer iterations (at least 3) where N would take longer
  std::string out;
};

// Throws mtrain::Error (exit 2) naming the bad argument.
CommBenchArgs parse_comm_bench_args(const std::vector<std::string>& args);

// Joins the group from `env` (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), runs the
// benchmark, returns the result (every rank) and writes it (rank 0, when args.out is set).
nlohmann::json run_comm_bench(const CommBenchArgs& args, const std::map<std::string, std::string>& env);

}  // namespace mtrain::trainer

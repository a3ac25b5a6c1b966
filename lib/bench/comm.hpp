#pragma once
// `mtrain bench comm`: collectives × sizes, nccl-tests style. mtrain starts the ranks itself
// through lib/launch (the same plan and supervisor as `mtrain launch`); each rank is
// `mtrain-worker bench-comm …` (lib/trainer/bench), which times the Communicator and checks
// every result; rank 0's JSON becomes the table here.
#include <string>
#include <vector>

#include "lib/bench/report.hpp"

namespace mtrain::bench {

struct CommBenchOptions {
  int nproc = 2;
  std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter", "broadcast"};
  int64_t min_bytes = 1 << 10;
  int64_t max_bytes = 1 << 30;
  int iters = 20;
  int warmup = 5;
  double max_seconds = 0;     // per size; > 0 lets large sizes run fewer iterations (at least 3)
  std::string worker_path;    // mtrain-worker
  std::string gpus;           // --gpus for the plan (CUDA builds)
  double timeout_s = 3600;    // the whole run
};

// Checks the options (ops, sizes), starts the ranks, returns the report. Throws mtrain::Error
// when the worker is missing or a rank fails.
BenchReport run_comm(const CommBenchOptions& o);

// The worker's argv for these options (after the program path).
std::vector<std::string> comm_worker_args(const CommBenchOptions& o, const std::string& out_file);

// Pure: the table, notes, plot and JSON from rank 0's result document.
BenchReport comm_report(const json& worker_result);

}  // namespace mtrain::bench

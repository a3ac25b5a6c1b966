#pragma once
// `mtrain bench train`: strategies × world sizes of the bundled trainer. Each cell runs `rounds`
// times, one `mtrain launch` per round (its own work dir), with `warmup` untimed steps before
// `steps` timed ones; the rounds are interleaved (round 1 of every cell, then round 2, …) so a
// slow phase of the machine hits every cell alike. The driver reads each run's summary.json
// (docs/architecture.md §5) and prints one row per cell: step time min / median / max over the
// rounds (the fastest step, the median of the rounds' medians, the slowest step). A cell with a
// failed round becomes a row carrying the worker's error (e.g. a strategy this build does not
// have) and the other cells still run.
#include <functional>
#include <string>
#include <vector>

#include "lib/config/names.hpp"

#include "lib/bench/report.hpp"
#include "lib/envreport/system_probe.hpp"

namespace mtrain::bench {

struct TrainBenchOptions {
  std::vector<std::string> strategies = config::choice_names<config::StrategyName>();  // all of them
  std::vector<int> nproc = {1, 2, 4};
  std::string model;                 // "" → the job default
  int steps = 10;   // timed steps per run
  int warmup = 2;   // untimed steps before them (train.timing_warmup_steps)
  int rounds = 3;
  std::vector<std::string> sets;     // --set key=value for every cell
  std::string config;                // --config job file for every cell
  std::string mtrain_path;
  std::string work_root;             // "" → a temporary folder, removed afterwards
  int timeout_ms = 1800000;          // each cell
};

struct Cell {
  std::string strategy;
  int nproc = 0;
  int round = 1;
  std::string work_dir;
  std::vector<std::string> argv;
};

// Every run in execution order: rounds outer, strategies, then world sizes.
std::vector<Cell> train_cells(const TrainBenchOptions& o, const std::string& work_root);

// Runs a cell's argv with its output going to `log_file`.
using CellRunner = std::function<envreport::CommandResult(const std::vector<std::string>& argv, const std::string& log_file,
                                                          int timeout_ms)>;

// Runs every cell (progress lines on stderr) and builds the report.
BenchReport run_train_cells(const std::vector<Cell>& cells, const TrainBenchOptions& o, const CellRunner& run);

BenchReport run_train_bench(const TrainBenchOptions& o);

// The error paragraph in a failed run's log: the last lines mentioning "error", else its tail.
std::string failure_reason(const std::string& log_text);

}  // namespace mtrain::bench

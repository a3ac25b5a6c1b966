#pragma once
// `mtrain bench train`: strategies × world sizes of the bundled trainer. Each cell is one
// `mtrain launch` (its own work dir); the driver reads <work_dir>/summary.json (ARCHITECTURE
// section 5) and prints one row per cell. A cell whose run fails becomes a row carrying the
// worker's error (e.g. a strategy this build does not have) and the other cells still run.
#include <functional>
#include <string>
#include <vector>

#include "mtrain/bench/report.hpp"
#include "mtrain/envreport/system_probe.hpp"

namespace mtrain::bench {

struct TrainBenchOptions {
  std::vector<std::string> strategies = {"ddp", "zero1", "zero2", "zero3", "fsdp"};
  std::vector<int> nproc = {1, 2, 4};
  std::string model;                 // "" → the job default
  int steps = 20;
  std::vector<std::string> sets;     // --set key=value for every cell
  std::string config;                // --config job file for every cell
  std::string mtrain_path;
  std::string work_root;             // "" → a temporary folder, removed afterwards
  int timeout_ms = 1800000;          // each cell
};

struct Cell {
  std::string strategy;
  int nproc = 0;
  std::string work_dir;
  std::vector<std::string> argv;
};

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

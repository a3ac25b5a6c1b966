#pragma once
// `mtrain runs plot RUN… -o FILE`: the training-loss and validation-loss curves of several runs
// of the bundled trainer on one chart (one line each; validation dashed by name), drawn with the
// same tool the benchmarks use (gnuplot, else matplotlib).
#include <string>
#include <vector>

#include "lib/bench/plot.hpp"
#include "lib/runs/catalog.hpp"

namespace mtrain::bench {

// The chart: "<run> loss" and "<run> val" series against the optimiser step. Pure.
PlotSpec runs_plot_spec(const std::vector<runs::Run>& runs);

// Checks the suffix (.png/.svg), finds the plotter `want` asks for and draws.
void plot_runs(const std::vector<runs::Run>& runs, const std::string& out_path, PlotterKind want);

}  // namespace mtrain::bench

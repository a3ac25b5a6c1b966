#include "lib/bench/runs_plot.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "lib/core/counted.hpp"
#include "lib/core/error.hpp"
#include "lib/core/visible_text.hpp"

namespace mtrain::bench {

PlotSpec runs_plot_spec(const std::vector<runs::Run>& runs) {
  PlotSpec spec;
  spec.title = runs.size() == 1 ? "Loss of " + runs[0].name : fmt::format("Loss of {} runs", runs.size());
  spec.xlabel = "step";
  spec.ylabel = "loss";
  for (const auto& r : runs) {
    const std::string label = r.name + (r.strategy.empty() ? "" : fmt::format(" ({}, {})", r.strategy, counted(r.world, "rank")));
    spec.series.push_back({label + " train", r.loss});
    if (!r.val.empty()) spec.series.push_back({label + " val", r.val});
  }
  return spec;
}

void plot_runs(const std::vector<runs::Run>& runs, const std::string& out_path, PlotterKind want) {
  const std::string ext = std::filesystem::path(out_path).extension().string();
  if (ext != ".png" && ext != ".svg")
    throw Error(fmt::format("-o {}: the chart file must end in .png or .svg", visible_text(out_path)), "e.g. -o loss.png");
  size_t points = 0;
  for (const auto& r : runs) points += r.loss.size() + r.val.size();
  if (points == 0)
    throw Error("none of the runs has a loss in its metrics.jsonl yet",
                "Plot runs that logged at least one step (train.log_interval).");
  envreport::PosixSystemProbe probe;
  draw(runs_plot_spec(runs), out_path, find_plotter(probe, want));
}

}  // namespace mtrain::bench

#pragma once
// Plots drawn by a real plotting tool found on the machine: gnuplot (preferred: one small
// binary), else matplotlib under /usr/bin/python3 or the python3 on PATH.
//
// Names and values (a run's strategy and folder, a benchmark's labels) come from files anyone may
// have written, so they reach the plotter only as data, never as program text (issue 40 item 2):
// gnuplot gets them in here-doc data blocks, one per line, each framed as |text| with its control
// characters made visible (mtrain::visible_text), so no line can end the block or start a command,
// and the script reads them back with $block[i] (no string of ours is ever parsed as gnuplot);
// matplotlib runs a fixed program that reads the spec as JSON from a data file. Every file is
// written O_EXCL into a private folder (mkdtemp), the paths reach the tool as arguments
// (gnuplot -c), and the tool draws into that folder: the chart is then copied to the asked
// path with every write checked (gnuplot says nothing when its output fails).
#include <string>
#include <utility>
#include <vector>

#include "lib/envreport/system_probe.hpp"
#include "lib/config/choice_table.hpp"

namespace mtrain::bench {

// --plotter of `mtrain bench` and `mtrain runs plot`: a tool (Auto: gnuplot, else matplotlib).
enum class PlotterKind { Auto, Gnuplot, Matplotlib };

}  // namespace mtrain::bench

namespace mtrain::config {
template <>
struct ChoiceTable<bench::PlotterKind> {
  static constexpr const char* what = "plotter";
  static constexpr ChoiceRow<bench::PlotterKind> rows[] = {{bench::PlotterKind::Auto, "auto"},
                                                           {bench::PlotterKind::Gnuplot, "gnuplot"},
                                                           {bench::PlotterKind::Matplotlib, "matplotlib"}};
};
}  // namespace mtrain::config

namespace mtrain::bench {

struct Series {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

struct PlotSpec {
  std::string title, xlabel, ylabel;
  bool logx = false;  // base 2 (sizes, world sizes)
  std::vector<Series> series;
};

struct Plotter {
  PlotterKind kind = PlotterKind::Gnuplot;  // Gnuplot or Matplotlib, never Auto
  std::string program;  // gnuplot or the python interpreter
};

// The tool `want` asks for (Auto: gnuplot, else matplotlib). Throws mtrain::Error (exit 1)
// saying what to install when none is usable.
Plotter find_plotter(const envreport::SystemProbe& probe, PlotterKind want);

// The gnuplot script (the terminal by out_path's suffix, which is checked; the chart goes to
// ARG1 of `gnuplot -c`; texts and points in data blocks), exposed for tests.
std::string gnuplot_script(const PlotSpec& spec, const std::string& out_path);
// The matplotlib program (the same for every chart: `python3 plot.py SPEC.json OUT FORMAT`) and
// the spec it reads.
const std::string& matplotlib_script();
std::string matplotlib_data(const PlotSpec& spec);

// Draws `spec` into `out_path` (.png or .svg); throws mtrain::Error on a bad suffix, when the
// tool fails (with its stderr), or when the chart cannot be written to out_path (naming it).
void draw(const PlotSpec& spec, const std::string& out_path, const Plotter& plotter);

}  // namespace mtrain::bench

#pragma once
// Plots drawn by a real plotting tool found on the machine: gnuplot (preferred: one small
// binary), else matplotlib under /usr/bin/python3 or the python3 on PATH. The data and the
// script are written to a temporary folder and the tool renders PNG or SVG by the file's suffix.
#include <string>
#include <utility>
#include <vector>

#include "mtrain/envreport/system_probe.hpp"

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
  std::string kind;     // "gnuplot" | "matplotlib"
  std::string program;  // gnuplot or the python interpreter
};

// `want`: auto | gnuplot | matplotlib. Throws mtrain::Error (exit 1) saying what to install
// when none is usable.
Plotter find_plotter(const envreport::SystemProbe& probe, const std::string& want);

// The script each tool runs (data inline), exposed for tests.
std::string gnuplot_script(const PlotSpec& spec, const std::string& out_path);
std::string matplotlib_script(const PlotSpec& spec, const std::string& out_path);

// Draws `spec` into `out_path` (.png or .svg); throws mtrain::Error on a bad suffix or when the
// tool fails (with its stderr).
void draw(const PlotSpec& spec, const std::string& out_path, const Plotter& plotter);

}  // namespace mtrain::bench

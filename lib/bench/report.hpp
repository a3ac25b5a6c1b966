#pragma once
// What every benchmark hands back, and how it reaches the user: an aligned text table (with
// notes under it) or the JSON document, on stdout or in --output FILE, and optionally a plot.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/bench/plot.hpp"
#include "lib/config/output_format.hpp"

namespace mtrain::bench {

using json = nlohmann::json;

struct Table {
  std::vector<std::string> headers;
  std::vector<std::vector<std::string>> rows;
  std::vector<bool> left;  // per column: left-aligned (default: right, like numbers)
  std::string render() const;
};

struct BenchReport {
  json doc;                         // the machine-readable result ("bench", "rows", …)
  Table table;
  std::vector<std::string> notes;   // lines printed under the table
  PlotSpec plot;
};

struct EmitOptions {
  config::OutputFormat format = config::OutputFormat::Text;
  std::string output;               // file instead of stdout
  std::string plot;                 // FILE.png | FILE.svg
  PlotterKind plotter = PlotterKind::Auto;
};

std::string render_text(const BenchReport& r);

// Writes the report; then draws the plot when asked (throws mtrain::Error, exit 1, when no
// plotting tool is installed — the results are already out by then).
void emit(const BenchReport& r, const EmitOptions& o);

}  // namespace mtrain::bench

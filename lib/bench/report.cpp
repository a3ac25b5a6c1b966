#include "lib/bench/report.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"

namespace mtrain::bench {

std::string Table::render() const {
  std::vector<size_t> width(headers.size(), 0);
  for (size_t c = 0; c < headers.size(); ++c) width[c] = headers[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size() && c < width.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (size_t c = 0; c < headers.size(); ++c) {
      const std::string v = c < cells.size() ? cells[c] : "";
      const bool l = c < left.size() && left[c];
      std::string pad(width[c] - std::min(width[c], v.size()), ' ');
      out += (c ? "  " : "") + (l ? v + pad : pad + v);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers);
  for (const auto& r : rows) out += line(r);
  return out;
}

std::string render_text(const BenchReport& r) {
  std::string out = r.table.render();
  for (const auto& n : r.notes) out += n + "\n";
  return out;
}

void emit(const BenchReport& r, const EmitOptions& o) {
  const std::string text = o.format == config::OutputFormat::Json ? r.doc.dump(2) + "\n" : render_text(r);
  if (o.output.empty()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  } else {
    std::ofstream f(o.output);
    if (!(f << text)) throw Error(fmt::format("--output {}: cannot write the file", o.output), "Check the folder exists.", kExitFailure);
    std::fprintf(stderr, "mtrain bench: wrote %s\n", o.output.c_str());
  }
  if (!o.plot.empty()) {
    envreport::PosixSystemProbe probe;
    draw(r.plot, o.plot, find_plotter(probe, o.plotter));
    std::fprintf(stderr, "mtrain bench: drew %s\n", o.plot.c_str());
  }
}

}  // namespace mtrain::bench

#include "mtrain/bench/plot.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/envreport/run_command.hpp"

namespace fs = std::filesystem;

namespace mtrain::bench {

namespace {

const char* kInstall = "Install one: `apt-get install gnuplot-nox` or `apt-get install python3-matplotlib`.";

std::string gp_quote(const std::string& s) {  // gnuplot single-quoted string: '' is a quote
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string suffix_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext != ".png" && ext != ".svg")
    throw Error(fmt::format("--plot {}: the file must end in .png or .svg", path), "e.g. --plot busbw.png");
  return ext.substr(1);
}

bool python_has_matplotlib(const envreport::SystemProbe& probe, const std::string& py) {
  if (probe.which(py).empty()) return false;
  auto r = probe.run({py, "-c", "import matplotlib"}, 30000);
  return r.started && r.rc == 0;
}

}  // namespace

Plotter find_plotter(const envreport::SystemProbe& probe, const std::string& want) {
  if (want != "auto" && want != "gnuplot" && want != "matplotlib")
    throw Error(fmt::format("--plotter '{}' is not auto, gnuplot or matplotlib", want));
  if (want != "matplotlib") {
    std::string gp = probe.which("gnuplot");
    if (!gp.empty()) return {"gnuplot", gp};
    if (want == "gnuplot")
      throw Error("--plotter gnuplot: gnuplot is not installed (not on PATH)", "`apt-get install gnuplot-nox`, or use --plotter auto.",
                  kExitFailure);
  }
  for (const std::string py : {"/usr/bin/python3", "python3"})
    if (python_has_matplotlib(probe, py)) return {"matplotlib", probe.which(py)};
  if (want == "matplotlib")
    throw Error("--plotter matplotlib: no python3 with matplotlib was found (/usr/bin/python3, python3 on PATH)",
                "`apt-get install python3-matplotlib`, or use --plotter auto.", kExitFailure);
  throw Error("cannot draw the plot: neither gnuplot nor matplotlib (under /usr/bin/python3 or python3 on PATH) "
              "is installed; the results above were still written",
              kInstall, kExitFailure);
}

std::string gnuplot_script(const PlotSpec& spec, const std::string& out_path) {
  std::string s;
  const bool svg = suffix_of(out_path) == "svg";
  s += svg ? "set terminal svg size 900,560 noenhanced\n" : "set terminal pngcairo size 900,560 noenhanced\n";
  s += "set output " + gp_quote(out_path) + "\n";
  s += "set title " + gp_quote(spec.title) + "\n";
  s += "set xlabel " + gp_quote(spec.xlabel) + "\n";
  s += "set ylabel " + gp_quote(spec.ylabel) + "\n";
  s += "set grid\nset key top left\n";
  if (spec.logx) s += "set logscale x 2\n";
  for (size_t i = 0; i < spec.series.size(); ++i) {
    s += fmt::format("$d{} << EOD\n", i);
    for (const auto& [x, y] : spec.series[i].points) s += fmt::format("{:.17g} {:.17g}\n", x, y);
    s += "EOD\n";
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < spec.series.size(); ++i)
    if (!spec.series[i].points.empty())
      parts.push_back(fmt::format("$d{} using 1:2 with linespoints lw 2 pt 7 title {}", i, gp_quote(spec.series[i].name)));
  if (parts.empty()) parts.push_back("NaN notitle");
  s += "plot " + str::join(parts, ", \\\n     ") + "\n";
  return s;
}

std::string matplotlib_script(const PlotSpec& spec, const std::string& out_path) {
  nlohmann::json j = {{"title", spec.title}, {"xlabel", spec.xlabel}, {"ylabel", spec.ylabel},
                      {"logx", spec.logx}, {"out", out_path}, {"series", nlohmann::json::array()}};
  for (const auto& se : spec.series) j["series"].push_back({{"name", se.name}, {"points", se.points}});
  suffix_of(out_path);
  return "import json\n"
         "import matplotlib\n"
         "matplotlib.use('Agg')\n"
         "import matplotlib.pyplot as plt\n"
         "spec = json.loads(" + nlohmann::json(j.dump()).dump() + ")\n"
         "fig, ax = plt.subplots(figsize=(9, 5.6))\n"
         "for s in spec['series']:\n"
         "    if s['points']:\n"
         "        xs, ys = zip(*s['points'])\n"
         "        ax.plot(xs, ys, marker='o', linewidth=2, label=s['name'])\n"
         "if spec['logx']:\n"
         "    ax.set_xscale('log', base=2)\n"
         "ax.set_title(spec['title']); ax.set_xlabel(spec['xlabel']); ax.set_ylabel(spec['ylabel'])\n"
         "ax.grid(True, alpha=0.4)\n"
         "ax.legend(loc='upper left')\n"
         "fig.tight_layout()\n"
         "fig.savefig(spec['out'])\n";
}

void draw(const PlotSpec& spec, const std::string& out_path, const Plotter& plotter) {
  const std::string script = plotter.kind == "gnuplot" ? gnuplot_script(spec, out_path) : matplotlib_script(spec, out_path);
  const char* tmp = std::getenv("TMPDIR");
  fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / fmt::format("mtrain-plot-{}", ::getpid());
  fs::create_directories(dir);
  fs::path file = dir / (plotter.kind == "gnuplot" ? "plot.gp" : "plot.py");
  std::ofstream(file) << script;
  envreport::RunOptions ro;
  ro.timeout_ms = 120000;
  auto r = envreport::run_command({plotter.program, file.string()}, ro);
  std::error_code ec;
  fs::remove_all(dir, ec);
  if (!r.started || r.rc != 0)
    throw Error(fmt::format("{} failed to draw {} (exit {}): {}", plotter.kind, out_path, r.rc, str::trim(r.err)),
                "Check that the folder of the plot file exists and is writable.", kExitFailure);
}

}  // namespace mtrain::bench

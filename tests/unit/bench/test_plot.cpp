#include <catch2/catch.hpp>

#include "mtrain/bench/plot.hpp"
#include "mtrain/core/error.hpp"

using namespace mtrain::bench;
using mtrain::envreport::CommandResult;
using mtrain::envreport::MemoryProbe;
using Catch::Matchers::Contains;

namespace {
PlotSpec spec() {
  PlotSpec p;
  p.title = "busbw, 2 ranks";
  p.xlabel = "size";
  p.ylabel = "GB/s";
  p.logx = true;
  p.series = {{"all_reduce", {{1024, 0.5}, {2048, 0.75}}}, {"it's", {{1024, 1}}}};
  return p;
}
}  // namespace

TEST_CASE("gnuplot scripts carry the data inline and pick the terminal by suffix", "[bench][plot]") {
  auto s = gnuplot_script(spec(), "/tmp/x.png");
  CHECK_THAT(s, Contains("set terminal pngcairo"));
  CHECK_THAT(s, Contains("set output '/tmp/x.png'"));
  CHECK_THAT(s, Contains("set logscale x 2"));
  CHECK_THAT(s, Contains("$d0 << EOD\n1024 0.5\n2048 0.75\nEOD"));
  CHECK_THAT(s, Contains("title 'it''s'"));
  CHECK_THAT(gnuplot_script(spec(), "/tmp/x.svg"), Contains("set terminal svg"));
  CHECK_THROWS_WITH(gnuplot_script(spec(), "/tmp/x.pdf"), Contains("must end in .png or .svg"));
  auto m = matplotlib_script(spec(), "/tmp/x.svg");
  CHECK_THAT(m, Contains("matplotlib.use('Agg')"));
  CHECK_THAT(m, Contains("set_xscale('log', base=2)"));
}

TEST_CASE("the plotter is whatever is installed, with a clear message when nothing is", "[bench][plot]") {
  MemoryProbe none;
  CHECK_THROWS_WITH(find_plotter(none, "auto"), Contains("neither gnuplot nor matplotlib"));
  CHECK_THROWS_WITH(find_plotter(none, "auto"), Contains("apt-get install gnuplot-nox"));
  CHECK_THROWS_WITH(find_plotter(none, "gnuplot"), Contains("gnuplot is not installed"));
  CHECK_THROWS_AS(find_plotter(none, "paint"), mtrain::Error);

  MemoryProbe gp;
  gp.programs["gnuplot"] = "/usr/bin/gnuplot";
  CHECK(find_plotter(gp, "auto").kind == "gnuplot");

  MemoryProbe mpl;
  mpl.programs["/usr/bin/python3"] = "/usr/bin/python3";
  mpl.commands["/usr/bin/python3 -c import matplotlib"] = CommandResult{true, 0, "", ""};
  auto p = find_plotter(mpl, "auto");
  CHECK(p.kind == "matplotlib");
  CHECK(p.program == "/usr/bin/python3");
  mpl.commands["/usr/bin/python3 -c import matplotlib"] = CommandResult{true, 1, "", "No module named 'matplotlib'"};
  CHECK_THROWS_WITH(find_plotter(mpl, "matplotlib"), Contains("python3-matplotlib"));
}

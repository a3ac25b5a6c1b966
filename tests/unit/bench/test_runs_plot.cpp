// The loss chart of several runs (lib/bench/runs_plot.cpp): one train series per run and a val
// series where the run validated, labelled with strategy and ranks; an output that is not a
// chart file, or runs with nothing to draw, are refused before any plotter runs.
#include <catch2/catch.hpp>

#include "lib/bench/runs_plot.hpp"
#include "lib/core/error.hpp"

using namespace mtrain::bench;
using mtrain::runs::Run;

namespace {
Run run(const std::string& name, const std::string& strategy, int world, bool with_val) {
  Run r;
  r.name = name;
  r.strategy = strategy;
  r.world = world;
  r.loss = {{1, 5.0}, {2, 4.0}};
  if (with_val) r.val = {{2, 4.5}};
  return r;
}
}  // namespace

TEST_CASE("runs_plot: train and val series per run, labelled", "[bench][runs_plot]") {
  const PlotSpec one = runs_plot_spec({run("wd/20261123_150401", "ddp", 2, true)});
  CHECK(one.title == "Loss of wd/20261123_150401");
  CHECK(one.xlabel == "step");
  CHECK(one.ylabel == "loss");
  CHECK_FALSE(one.logx);
  REQUIRE(one.series.size() == 2);
  CHECK(one.series[0].name == "wd/20261123_150401 (ddp, 2 ranks) train");
  CHECK(one.series[0].points == std::vector<std::pair<double, double>>{{1, 5.0}, {2, 4.0}});
  CHECK(one.series[1].name == "wd/20261123_150401 (ddp, 2 ranks) val");
  CHECK(one.series[1].points.size() == 1);

  const PlotSpec two = runs_plot_spec({run("a", "zero3", 4, false), run("b", "", 0, true)});
  CHECK(two.title == "Loss of 2 runs");
  REQUIRE(two.series.size() == 3);  // a has no validation
  CHECK(two.series[0].name == "a (zero3, 4 ranks) train");
  CHECK(two.series[1].name == "b train");  // no summary: no strategy to name
  CHECK(two.series[2].name == "b val");
}

TEST_CASE("runs_plot: refusals before drawing", "[bench][runs_plot]") {
  CHECK_THROWS_WITH(plot_runs({run("a", "ddp", 1, false)}, "/tmp/loss.pdf", PlotterKind::Auto),
                    Catch::Contains("-o /tmp/loss.pdf") && Catch::Contains(".png or .svg"));
  Run empty = run("a", "ddp", 1, false);
  empty.loss.clear();
  CHECK_THROWS_WITH(plot_runs({empty}, "/tmp/loss.png", PlotterKind::Auto),
                    Catch::Contains("none of the runs has a loss"));
}

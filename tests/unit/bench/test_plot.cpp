#include <catch2/catch.hpp>

#include <cctype>
#include <sstream>

#include <nlohmann/json.hpp>

#include "lib/bench/plot.hpp"
#include "lib/core/error.hpp"

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

TEST_CASE("gnuplot scripts carry the data in data blocks and pick the terminal by suffix", "[bench][plot]") {
  auto s = gnuplot_script(spec(), "/tmp/x.png");
  CHECK_THAT(s, Contains("set terminal pngcairo"));
  CHECK_THAT(s, Contains("set output ARG1\n"));  // the path is an argument, never script text
  CHECK_THAT(s, !Contains("/tmp/x.png"));
  CHECK_THAT(s, Contains("set logscale x 2"));
  CHECK_THAT(s, Contains("$text << EOD\n|busbw, 2 ranks|\n|size|\n|GB/s|\n|all_reduce|\n|it's|\nEOD\n"));
  CHECK_THAT(s, Contains("$d0 << EOD\n1024 0.5\n2048 0.75\nEOD"));
  CHECK_THAT(s, Contains("title str_at(4)") && Contains("title str_at(5)") && Contains("set title str_at(1)"));
  CHECK_THAT(gnuplot_script(spec(), "/tmp/x.svg"), Contains("set terminal svg"));
  CHECK_THROWS_WITH(gnuplot_script(spec(), "/tmp/x.pdf"), Contains("must end in .png or .svg"));
  const std::string& m = matplotlib_script();
  CHECK_THAT(m, Contains("matplotlib.use('Agg')"));
  CHECK_THAT(m, Contains("set_xscale('log', base=2)"));
  CHECK_THAT(m, Contains("json.load(f)"));
}

// Issue 40 item 2: a strategy of "ddp\nsystem(\"touch PWNED\")\n#" in summary.json was a gnuplot
// command. Whatever the names, the script outside its data blocks is the same text, and no data
// line can end its block early.
TEST_CASE("names reach the plotters as data only", "[bench][plot][hostile]") {
  PlotSpec evil = spec();
  evil.title = "t\nsystem(\"touch PWNED\")\n#";
  evil.xlabel = "EOD";
  evil.ylabel = "EOD\nplot 1";
  evil.series[0].name = "ddp\r\nsystem(\"touch PWNED\")\n#'\\";
  evil.series[1].name = std::string("a\x1b]0;x\x07\0b\x7f", 10) + "\xc2\x9b";
  // The lines outside the blocks; each block's lines checked on the way.
  auto program = [](const std::string& script) {
    std::string out, line;
    bool in_block = false;
    std::istringstream in(script);
    while (std::getline(in, line)) {
      if (in_block && line.rfind("EOD", 0) == 0) {
        in_block = false;
      } else if (in_block) {
        CHECK((line.front() == '|' || std::isdigit(static_cast<unsigned char>(line.front()))));
        for (unsigned char c : line) CHECK((c >= 0x20 && c != 0x7f));
      } else {
        in_block = line.find("<< EOD") != std::string::npos;
        out += line + "\n";
      }
    }
    CHECK_FALSE(in_block);
    return out;
  };
  const std::string s = gnuplot_script(evil, "/tmp/x.png");
  CHECK(program(s) == program(gnuplot_script(spec(), "/tmp/x.png")));
  CHECK_THAT(s, Contains("|ddp^M^Jsystem(\"touch PWNED\")^J#'\\|\n"));
  CHECK_THAT(s, Contains("|EOD^Jplot 1|\n"));
  CHECK_THAT(s, Contains("|a^[]0;x^G^@b^?\\u009b|\n"));

  const std::string data = matplotlib_data(evil);
  const auto j = nlohmann::json::parse(data);
  CHECK(j["series"][0]["name"] == "ddp^M^Jsystem(\"touch PWNED\")^J#'\\");
  CHECK(j["title"] == "t^Jsystem(\"touch PWNED\")^J#");
  for (unsigned char c : data) CHECK((c >= 0x20 && c < 0x7f));  // ASCII JSON, every control escaped
}

TEST_CASE("the plotter is whatever is installed, with a clear message when nothing is", "[bench][plot]") {
  MemoryProbe none;
  CHECK_THROWS_WITH(find_plotter(none, PlotterKind::Auto), Contains("neither gnuplot nor matplotlib"));
  CHECK_THROWS_WITH(find_plotter(none, PlotterKind::Auto), Contains("apt-get install gnuplot-nox"));
  CHECK_THROWS_WITH(find_plotter(none, PlotterKind::Gnuplot), Contains("gnuplot is not installed"));
  CHECK_FALSE(mtrain::config::parse_choice<PlotterKind>("paint"));

  MemoryProbe gp;
  gp.programs["gnuplot"] = "/usr/bin/gnuplot";
  CHECK(find_plotter(gp, PlotterKind::Auto).kind == PlotterKind::Gnuplot);

  MemoryProbe mpl;
  mpl.programs["/usr/bin/python3"] = "/usr/bin/python3";
  const std::string probe = "/usr/bin/python3 -c import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; import matplotlib";
  mpl.commands[probe] = CommandResult{true, 0, "", ""};
  auto p = find_plotter(mpl, PlotterKind::Auto);
  CHECK(p.kind == PlotterKind::Matplotlib);
  CHECK(p.program == "/usr/bin/python3");
  mpl.commands[probe] = CommandResult{true, 1, "", "No module named 'matplotlib'"};
  CHECK_THROWS_WITH(find_plotter(mpl, PlotterKind::Matplotlib), Contains("python3-matplotlib"));
}

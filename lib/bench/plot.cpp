#include "lib/bench/plot.hpp"

#include "lib/core/unique_fd.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/envreport/run_command.hpp"

namespace fs = std::filesystem;

namespace mtrain::bench {

namespace {

const char* kImportMatplotlib = "import sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; import matplotlib";

const char* kInstall = "Install one: `apt-get install gnuplot-nox` or `apt-get install python3-matplotlib`.";

bool write_whole(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// One text as a line of a gnuplot data block: control characters (newline included) made
// visible, so the line cannot end early; framed by '|', so it never starts with the block's
// terminator "EOD" (gnuplot ends a block at any line that starts with it) nor ends in a '\'.
std::string data_line(const std::string& text) { return "|" + visible_text(text) + "|\n"; }

// A folder only this process uses (mkdtemp: 0700, a fresh random name), removed with its files.
struct PrivateDir {
  std::string path;
  PrivateDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/mtrain-plot-XXXXXX";
    if (!::mkdtemp(templ.data()))
      throw Error(visible_text(fmt::format("cannot create a temporary folder in {} for the plot: {}",
                                           fs::path(templ).parent_path().string(), std::strerror(errno))),
                  "Set TMPDIR to a writable folder.", kExitFailure);
    path = templ;
  }
  ~PrivateDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;

  // Writes a new file `name` (O_EXCL, never through a link) holding `text`; returns its path.
  std::string put(const std::string& name, const std::string& text) const {
    std::string p = path + "/" + name;
    int e = 0;
    UniqueFd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd) {
      e = errno;
    } else {
      if (!write_whole(fd.get(), text.data(), text.size())) e = errno;
      if (const int closed = fd.close(); closed != 0 && e == 0) e = closed;
    }
    if (e != 0)
      throw Error(visible_text(fmt::format("cannot write the plot's temporary file {}: {}", p, std::strerror(e))),
                  "Set TMPDIR to a writable folder with room.", kExitFailure);
    return p;
  }
};

// The drawn chart from the private folder to where it was asked for, every write checked:
// a full disk, /dev/full or a failed close is an error naming the path, not "wrote …".
void copy_chart(const std::string& from, const std::string& to, const std::string& kind) {
  std::string why;
  UntrustedFile in = open_untrusted(from, &why);
  if (in.fd() < 0 || in.size() == 0)
    throw Error(fmt::format("{} exited 0 but drew nothing{}", kind, in.fd() < 0 ? " (" + why + ")" : ""),
                "Check the tool's installation (its PNG and SVG terminals).", kExitFailure);
  std::string bytes(in.size(), '\0');
  if (!in.pread_exact(bytes.data(), bytes.size(), 0))
    throw Error(fmt::format("cannot read the chart {} drew: {}", kind, std::strerror(errno ? errno : EIO)), "", kExitFailure);
  auto fail = [&](int e) {
    return Error(visible_text(fmt::format("cannot write the chart to {}: {}", to, std::strerror(e))),
                 "Check that its folder exists, is writable and has room.", kExitFailure);
  };
  UniqueFd fd(::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666));
  if (!fd) throw fail(errno);
  if (!write_whole(fd.get(), bytes.data(), bytes.size())) throw fail(errno);
  struct stat st {};
  // fsync reports a delayed write error of a regular file; devices and pipes have nothing to sync.
  if (::fstat(fd.get(), &st) == 0 && S_ISREG(st.st_mode) && ::fsync(fd.get()) != 0) throw fail(errno);
  if (const int closed = fd.close(); closed != 0) throw fail(closed);
}

std::string suffix_of(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  if (ext != ".png" && ext != ".svg")
    throw Error(fmt::format("--plot {}: the file must end in .png or .svg", visible_text(path)), "e.g. --plot busbw.png");
  return ext.substr(1);
}

bool python_has_matplotlib(const envreport::SystemProbe& probe, const std::string& py) {
  if (probe.which(py).empty()) return false;
  // Not from the current folder (sys.path[0] of `-c` is ''): a matplotlib.py planted in a work
  // dir must not run when someone plots from there.
  auto r = probe.run({py, "-c", kImportMatplotlib}, 30000);
  return r.started && r.rc == 0;
}

}  // namespace

Plotter find_plotter(const envreport::SystemProbe& probe, PlotterKind want) {
  if (want != PlotterKind::Matplotlib) {
    std::string gp = probe.which("gnuplot");
    if (!gp.empty()) return {PlotterKind::Gnuplot, gp};
    if (want == PlotterKind::Gnuplot)
      throw Error("--plotter gnuplot: gnuplot is not installed (not on PATH)", "`apt-get install gnuplot-nox`, or use --plotter auto.",
                  kExitFailure);
  }
  for (const std::string py : {"/usr/bin/python3", "python3"})
    if (python_has_matplotlib(probe, py)) return {PlotterKind::Matplotlib, probe.which(py)};
  if (want == PlotterKind::Matplotlib)
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
  s += "set output ARG1\n";
  // The texts, one framed line each: $text[1] title, [2] xlabel, [3] ylabel, [4 + i] series i.
  s += "$text << EOD\n";
  for (const std::string* t : {&spec.title, &spec.xlabel, &spec.ylabel}) s += data_line(*t);
  for (const auto& se : spec.series) s += data_line(se.name);
  s += "EOD\n";
  s += "str_at(i) = $text[i][2:strlen($text[i])-1]\n";
  s += "set title str_at(1)\nset xlabel str_at(2)\nset ylabel str_at(3)\n";
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
      parts.push_back(fmt::format("$d{} using 1:2 with linespoints lw 2 pt 7 title str_at({})", i, i + 4));
  if (parts.empty()) parts.push_back("NaN notitle");
  s += "plot " + str::join(parts, ", \\\n     ") + "\n";
  return s;
}

const std::string& matplotlib_script() {
  static const std::string script =
      "import json, sys\n"
      "import matplotlib\n"
      "matplotlib.use('Agg')\n"
      "import matplotlib.pyplot as plt\n"
      "with open(sys.argv[1], encoding='utf-8') as f:\n"
      "    spec = json.load(f)\n"
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
      "fig.savefig(sys.argv[2], format=sys.argv[3])\n";
  return script;
}

std::string matplotlib_data(const PlotSpec& spec) {
  nlohmann::json j = {{"title", visible_text(spec.title)}, {"xlabel", visible_text(spec.xlabel)},
                      {"ylabel", visible_text(spec.ylabel)}, {"logx", spec.logx}, {"series", nlohmann::json::array()}};
  for (const auto& se : spec.series) j["series"].push_back({{"name", visible_text(se.name)}, {"points", se.points}});
  return j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

void draw(const PlotSpec& spec, const std::string& out_path, const Plotter& plotter) {
  const std::string suffix = suffix_of(out_path);
  const bool gnuplot = plotter.kind == PlotterKind::Gnuplot;
  PrivateDir dir;
  const std::string program = dir.put(gnuplot ? "plot.gp" : "plot.py", gnuplot ? gnuplot_script(spec, out_path) : matplotlib_script());
  const std::string chart = dir.path + "/chart." + suffix;
  std::vector<std::string> argv;
  if (gnuplot) {
    argv = {plotter.program, "-c", program, chart};
  } else {
    argv = {plotter.program, program, dir.put("spec.json", matplotlib_data(spec)), chart, suffix};
  }
  envreport::RunOptions ro;
  ro.timeout_ms = 120000;
  auto r = envreport::run_command(argv, ro);
  if (!r.started || r.rc != 0) {
    std::string err = str::trim(r.err);
    if (err.size() > 2000) err = "…" + err.substr(err.size() - 2000);
    throw Error(visible_text(fmt::format("{} failed to draw {} (exit {}): {}", config::to_string(plotter.kind),
                                         out_path, r.rc, err)),
                "Run it again with --plotter naming the other tool, or check the tool's installation.", kExitFailure);
  }
  copy_chart(chart, out_path, config::to_string(plotter.kind));
}

}  // namespace mtrain::bench

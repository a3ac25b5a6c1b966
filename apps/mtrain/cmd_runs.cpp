// `mtrain runs [DIR]`: the bundled trainer's runs (one folder each under a work dir) with
// strategy, world, steps, final loss and validation, duration and state; `mtrain runs plot RUN…
// -o loss.png|svg` draws their loss curves on one chart. Flags → options → lib/runs, lib/bench.
// What a run folder could not give (a skipped run, a bad metrics line) is a warning on stderr;
// the listing itself goes to stdout, and a failed write there is an error (exit 1).
#include <iterator>

#include <fmt/format.h>

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/bench/runs_plot.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/output_format.hpp"
#include "lib/core/error.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/runs/catalog.hpp"
#include "console.hpp"

namespace mtrain::app {

namespace {

void warn_all(const std::vector<std::string>& skipped, const std::vector<runs::Run>& runs) {
  print_warnings(skipped);
  for (const auto& r : runs) print_warnings(r.warnings);
}

// What `runs plot` prints once the chart is written: the file, or the runs and their curves.
std::string plotted(const std::vector<runs::Run>& runs, const std::string& output, config::OutputFormat format) {
  if (format == config::OutputFormat::Text)
    return fmt::format("wrote {} ({} run{})\n", visible_text(output), runs.size(), runs.size() == 1 ? "" : "s");
  auto j = runs::runs_json(runs, true);
  j["output"] = output;
  return runs::runs_json_text(j) + "\n";
}

}  // namespace

void build_runs(CLI::App* sub, Exit& exit) {
  struct Flags {
    std::string dir = "work_dirs";
    config::OutputFormat format = config::OutputFormat::Text;
    std::vector<std::string> plot_runs;
    std::string output;
    bench::PlotterKind plotter = bench::PlotterKind::Auto;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("dir", f->dir, "A work dir (train.work_dir) or a folder of them")->default_str("work_dirs");
  config::add_choice_option(*sub, "--format", f->format, "Output format")->default_str("text");
  sub->footer("Each run of `mtrain launch` (bundled trainer) has its own folder work_dir/<YYYYmmdd_HHMMSS>/ with run.json, "
              "metrics.jsonl and summary.json; checkpoints stay in work_dir/checkpoints for --resume auto. A run continued with --resume auto (after Ctrl-C "
              "or preemption) is one row and one curve: STEPS says how many steps each launch trained. A run whose "
              "files cannot be read, and a malformed metrics line, are skipped and named on stderr.\n\n" +
              completion::examples_block({{"mtrain runs work_dirs/default", "one row per run"},
                                          {"mtrain runs work_dirs --format json", "every work dir's runs, for a program"}}));
  sub->callback([f, sub, &exit] {
    if (sub->got_subcommand("plot")) return;
    std::vector<std::string> skipped;
    const auto runs = runs::list_runs(f->dir, &skipped);
    warn_all(skipped, runs);
    print_stdout(f->format == config::OutputFormat::Json ? runs::runs_json_text(runs::runs_json(runs, false)) + "\n"
                                                         : runs::runs_table(runs));
    exit.code = 0;
  });

  auto* plot = sub->add_subcommand("plot", "Draw the loss and validation curves of several runs on one chart");
  plot->footer(completion::examples_block({{"mtrain runs plot work_dirs/default -o loss.png", "every run of a work dir"},
                                           {"mtrain runs plot work_dirs/a work_dirs/b -o loss.svg", "two work dirs compared"}}));
  plot->add_option("runs", f->plot_runs, "Run folders (that launch alone), or work dirs (every run in them, resumed launches joined)")->required();
  plot->add_option("-o,--output", f->output, "Chart file, .png or .svg")->required();
  config::add_choice_option(*plot, "--plotter", f->plotter, "Plotting tool")->default_str("auto");
  config::add_choice_option(*plot, "--format", f->format,
                            "What to print: text (the file) or json (the runs and their curves)")
      ->default_str("text");
  plot->callback([f, &exit] {
    std::vector<runs::Run> runs;
    std::vector<std::string> skipped;
    for (const auto& r : f->plot_runs) {
      auto found = runs::resolve_runs(r, &skipped);
      runs.insert(runs.end(), std::make_move_iterator(found.begin()), std::make_move_iterator(found.end()));
    }
    warn_all(skipped, runs);
    bench::plot_runs(runs, f->output, f->plotter);
    print_stdout(plotted(runs, f->output, f->format));
    exit.code = 0;
  });
}

}  // namespace mtrain::app

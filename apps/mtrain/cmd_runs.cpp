// `mtrain runs [DIR]`: the bundled trainer's runs (one folder each under a work dir) with
// strategy, world, steps, final loss and validation, duration and state; `mtrain runs plot RUN…
// -o loss.png|svg` draws their loss curves on one chart. Flags → options → lib/runs, lib/bench.
#include <iostream>

#include "commands.hpp"
#include "mtrain/bench/runs_plot.hpp"
#include "mtrain/runs/catalog.hpp"

namespace mtrain::app {

void build_runs(CLI::App* sub, Exit& exit) {
  struct Flags {
    std::string dir = "work_dirs", format = "text";
    std::vector<std::string> plot_runs;
    std::string output, plotter = "auto";
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("dir", f->dir, "A work dir (train.work_dir) or a folder of them")->default_str("work_dirs");
  sub->add_option("--format", f->format, "Output format")->check(CLI::IsMember({"text", "json"}))->default_str("text");
  sub->footer("Each run of `mtrain launch` (bundled trainer) has its own folder work_dir/<YYYYmmdd_HHMMSS>/ with run.json, "
              "metrics.jsonl and summary.json; checkpoints stay in work_dir/checkpoints for --resume auto.");
  sub->callback([f, sub, &exit] {
    if (sub->got_subcommand("plot")) return;
    const auto runs = runs::list_runs(f->dir);
    std::cout << (f->format == "json" ? runs::runs_json(runs, false).dump(2) + "\n" : runs::runs_table(runs));
    exit.code = 0;
  });

  auto* plot = sub->add_subcommand("plot", "Draw the loss and validation curves of several runs on one chart");
  plot->add_option("runs", f->plot_runs, "Run folders, or work dirs (their newest run)")->required();
  plot->add_option("-o,--output", f->output, "Chart file, .png or .svg")->required();
  plot->add_option("--plotter", f->plotter, "Plotting tool")->check(CLI::IsMember({"auto", "gnuplot", "matplotlib"}))->default_str("auto");
  plot->add_option("--format", f->format, "What to print: text (the file) or json (the runs and their curves)")
      ->check(CLI::IsMember({"text", "json"}))
      ->default_str("text");
  plot->callback([f, &exit] {
    std::vector<runs::Run> runs;
    for (const auto& r : f->plot_runs) runs.push_back(runs::resolve_run(r));
    bench::plot_runs(runs, f->output, f->plotter);
    if (f->format == "json") {
      auto j = runs::runs_json(runs, true);
      j["output"] = f->output;
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "wrote " << f->output << " (" << runs.size() << " run" << (runs.size() == 1 ? "" : "s") << ")\n";
    }
    exit.code = 0;
  });
}

}  // namespace mtrain::app

// The command table: each command's name, description and builder, in `mtrain --help` order.
#include <memory>

#include "commands.hpp"

namespace mtrain::app {

namespace {
struct Command {
  const char* name;
  const char* description;
  bool hidden;  // internal: not listed by --help, nor offered as a suggestion
  void (*build)(CLI::App* sub, Exit& exit);
};

constexpr Command kCommands[] = {
    {"launch", "Start one process per rank with the torchrun environment and supervise them", false, build_launch},
    {"checkpoint", "Consolidate, inspect or verify sharded checkpoints", false, build_checkpoint},
    {"slurm", "Write, submit and follow Slurm jobs (script, submit, status, logs, cancel)", false, build_slurm},
    {"config", "Create (init wizard), validate, show, import and export job configurations", false, build_config},
    {"env", "Report the machine, GPUs, network and environment for bug reports", false, build_env},
    {"estimate", "Will it fit: per-rank memory of every strategy for a model, world and settings, and which to use",
     false, build_estimate},
    {"export", "Export a PyTorch model with torch.export and AOTInductor into a compiled package (model.name compiled)",
     false, build_export},
    {"bench", "Benchmark collectives, strategies and launch latency", false, build_bench},
    {"__barrier", "Rank program of `mtrain bench launch`: one TCP barrier", true, build_barrier},
    {"runs", "List the bundled trainer's runs in a work dir; `runs plot` compares their loss curves", false,
     build_runs},
    {"completion", "Print a shell completion script for bash, zsh or fish", false, build_completion},
    {"__man", "Write the manual pages (mtrain.1, mtrain-launch.1, ...) into DIR", true, build_man},
    {"__complete", "Values for the completion scripts", true, build_complete},
};
constexpr std::size_t kCount = sizeof(kCommands) / sizeof(kCommands[0]);
}  // namespace

void declare_commands(CLI::App& root, Exit& exit, const std::string& first_word) {
  struct Declared {
    CLI::App* sub[kCount] = {};
    bool built[kCount] = {};
  };
  auto d = std::make_shared<Declared>();
  for (std::size_t i = 0; i < kCount; ++i) {
    d->sub[i] = root.add_subcommand(kCommands[i].name, kCommands[i].description);
    if (kCommands[i].hidden) d->sub[i]->group("");
  }
  auto build = [d, &exit](std::size_t i) {
    if (d->built[i]) return;
    d->built[i] = true;
    kCommands[i].build(d->sub[i], exit);
  };
  exit.build_all = [build] {
    for (std::size_t i = 0; i < kCount; ++i) build(i);
  };
  for (std::size_t i = 0; i < kCount; ++i)
    if (!first_word.empty() && d->sub[i]->check_name(first_word)) build(i);
}

}  // namespace mtrain::app

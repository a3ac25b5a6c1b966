#pragma once
// Each subcommand registers itself on the root app. A subcommand is thin: flags → an options
// struct → one library call; it returns the process exit code through `Exit`.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mtrain::app {

// What main hands every subcommand: the exit code it chose, and the words after the first
// `--` on the command line (CLI11 gives those back to the root app, so main splits them off).
struct Exit {
  int code = 0;
  bool has_dashdash = false;
  std::vector<std::string> after_dashdash;
  // Per subcommand name: rewrites its words (those before a first `--`) before parsing.
  std::map<std::string, std::function<std::vector<std::string>(const std::vector<std::string>&)>> rewrite;

  // A subcommand's trailing program: what CLI11 left over (prefix_command) followed by
  // `-- …`, or just the words after `--`.
  std::vector<std::string> program(std::vector<std::string> remaining) const {
    if (remaining.empty()) return after_dashdash;
    if (has_dashdash) {
      remaining.push_back("--");
      remaining.insert(remaining.end(), after_dashdash.begin(), after_dashdash.end());
    }
    return remaining;
  }
};

void add_launch(CLI::App& root, Exit& exit);
void add_checkpoint(CLI::App& root, Exit& exit);
void add_slurm(CLI::App& root, Exit& exit);
void add_config(CLI::App& root, Exit& exit);
void add_env(CLI::App& root, Exit& exit);
void add_estimate(CLI::App& root, Exit& exit);
void add_bench(CLI::App& root, Exit& exit);
void add_runs(CLI::App& root, Exit& exit);
void add_completion(CLI::App& root, Exit& exit);
void add_unbuilt(CLI::App& root, Exit& exit);

}  // namespace mtrain::app

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
  // Builds every command not built yet (declare_commands sets it).
  std::function<void()> build_all = [] {};

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

// Declares every command on `root` with its name and description (what `mtrain --help` lists) and
// builds the options and callback of only the one that `first_word` names: generating the
// settings' flags is most of the launcher's start-up (`mtrain --help` 6-8 ms with all built,
// bench/launch). Exit::build_all builds the rest, for the completion scripts and the man pages.
void declare_commands(CLI::App& root, Exit& exit, const std::string& first_word);

// One per command: adds its options, subcommands and callback to `sub`, declared by
// declare_commands (commands.cpp holds the table of names and descriptions).
void build_launch(CLI::App* sub, Exit& exit);
void build_checkpoint(CLI::App* sub, Exit& exit);
void build_slurm(CLI::App* sub, Exit& exit);
void build_config(CLI::App* sub, Exit& exit);
void build_env(CLI::App* sub, Exit& exit);
void build_estimate(CLI::App* sub, Exit& exit);
void build_export(CLI::App* sub, Exit& exit);
void build_bench(CLI::App* sub, Exit& exit);
void build_barrier(CLI::App* sub, Exit& exit);
void build_runs(CLI::App* sub, Exit& exit);
void build_completion(CLI::App* sub, Exit& exit);
void build_man(CLI::App* sub, Exit& exit);
void build_complete(CLI::App* sub, Exit& exit);
void add_unbuilt(CLI::App& root, Exit& exit);

}  // namespace mtrain::app

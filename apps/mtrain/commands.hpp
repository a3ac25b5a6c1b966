#pragma once
// Each subcommand registers itself on the root app. A subcommand is thin: flags → an options
// struct → one library call; it returns the process exit code through `Exit`.
#include <CLI/CLI.hpp>

namespace mtrain::app {

// The exit code chosen by whichever subcommand ran.
struct Exit {
  int code = 0;
};

void add_launch(CLI::App& root, Exit& exit);
void add_checkpoint(CLI::App& root, Exit& exit);
void add_config(CLI::App& root, Exit& exit);
void add_unbuilt(CLI::App& root, Exit& exit);

}  // namespace mtrain::app

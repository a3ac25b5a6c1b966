// `mtrain checkpoint`: consolidate and inspect sharded checkpoints (trainer core, part 2).
#include <cstdio>

#include "commands.hpp"
#include "mtrain/core/error.hpp"

namespace mtrain::app {

void add_checkpoint(CLI::App& root, Exit& exit) {
  auto* sub = root.add_subcommand("checkpoint", "Consolidate or inspect sharded checkpoints [not built yet]");
  sub->allow_extras();
  sub->prefix_command();
  sub->callback([&exit] {
    std::fprintf(stderr, "mtrain checkpoint: this command is not built in this version of mtrain yet. Nothing was done.\n");
    exit.code = kExitNotBuilt;
  });
}

}  // namespace mtrain::app

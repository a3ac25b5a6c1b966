// Subcommands of the final product that this build does not provide yet. They are registered so
// that `mtrain --help` shows the whole tool, and they say plainly that they are not built.
#include <cstdio>

#include "commands.hpp"
#include "lib/core/error.hpp"

namespace mtrain::app {

namespace {
struct Unbuilt {
  const char* name;
  const char* help;
};
constexpr Unbuilt kUnbuilt[] = {
    {"config", "Create (init wizard), validate, show and import job configurations"},
    {"slurm", "Write, submit and follow Slurm jobs (script, submit, status, logs, cancel)"},
};
}  // namespace

void add_unbuilt(CLI::App& root, Exit& exit) {
  for (const auto& u : kUnbuilt) {
    bool built = false;  // a real implementation registered first
    for (const auto* sub : root.get_subcommands([](CLI::App*) { return true; }))
      built = built || sub->get_name() == u.name;
    if (built) continue;
    auto* sub = root.add_subcommand(u.name, std::string(u.help) + " [not built yet]");
    sub->allow_extras();
    sub->prefix_command();
    const char* name = u.name;
    sub->callback([name, &exit] {
      std::fprintf(stderr,
                   "mtrain %s: this command is not built in this version of mtrain yet. "
                   "Nothing was done.\n",
                   name);
      exit.code = kExitNotBuilt;
    });
  }
}

}  // namespace mtrain::app

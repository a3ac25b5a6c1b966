// mtrain: one native binary to launch, configure and benchmark distributed training.
#include <cstdio>

#include "commands.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/launch/launcher_signals.hpp"
#include "mtrain/version.hpp"

int main(int argc, char** argv) {
  // The launcher never dies of a lost console or a notice signal (launcher_signals.hpp): from
  // its first instruction, whatever it is doing when they arrive.
  if (argc > 1 && std::string(argv[1]) == "launch") mtrain::launch::ignore_stray_signals();
  CLI::App root{"mtrain: launch, configure and benchmark distributed training", "mtrain"};
  root.set_version_flag("--version", std::string("mtrain ") + mtrain::kVersion);
  root.require_subcommand(1);
  root.footer("Run `mtrain <command> --help` for a command's options.");
  mtrain::app::Exit exit;
  mtrain::app::add_launch(root, exit);
  mtrain::app::add_checkpoint(root, exit);
  mtrain::app::add_slurm(root, exit);
  mtrain::app::add_config(root, exit);
  mtrain::app::add_env(root, exit);
  mtrain::app::add_bench(root, exit);
  mtrain::app::add_completion(root, exit);
  mtrain::app::add_unbuilt(root, exit);
  std::vector<std::string> args;
  for (int i = argc - 1; i >= 1; --i) args.emplace_back(argv[i]);  // CLI11 wants them reversed
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      exit.has_dashdash = true;
      exit.after_dashdash.assign(argv + i + 1, argv + argc);
      args.erase(args.begin(), args.begin() + (argc - i));
      break;
    }
  }
  try {
    root.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = root.exit(e);
    return rc == 0 ? 0 : mtrain::kExitUsage;
  } catch (const mtrain::Error& e) {
    std::fprintf(stderr, "%s\n", e.paragraph().c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return mtrain::kExitFailure;
  }
  return exit.code;
}

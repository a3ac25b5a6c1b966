// mtrain: one native binary to launch, configure and benchmark distributed training.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string_view>

#include <fmt/format.h>

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/launcher_signals.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/worker_facts.hpp"
#include "lib/envreport/report.hpp"
#include "generated/git_revision.hpp"
#include "lib/launch/launch.hpp"
#include "generated/version.hpp"

// The launcher never dies of a lost console or a notice signal (launcher_signals.hpp): from its
// first instruction, whatever it is doing when they arrive. glibc runs the executable's
// .preinit_array (with argc, argv, envp) before any library's constructor and before our own
// static initialisers, so even a USR1 sent while they run is held, not fatal.
static void hold_signals_before_main(int argc, char** argv, char**) {
  if (argc > 1 && argv[1] && std::string_view(argv[1]) == "launch") mtrain::launch::hold_stray_signals();
}
__attribute__((section(".preinit_array"), used)) static void (*const hold_signals_early)(int, char**, char**) =
    hold_signals_before_main;

static std::string version_text() {
  const std::string worker = mtrain::launch::own_worker();
  if (auto facts = worker.empty() ? std::nullopt : mtrain::read_worker_facts(worker))
    return mtrain::envreport::version_text(mtrain::kVersion, mtrain::kGitRevision,
                                           mtrain::envreport::worker_from_facts(worker, *facts));
  mtrain::envreport::PosixSystemProbe probe;
  return mtrain::envreport::version_text(mtrain::kVersion, mtrain::kGitRevision,
                                         mtrain::envreport::probe_worker(probe, worker, 10000));
}

static int run_mtrain(int argc, char** argv) {
  // `mtrain --version` alone answers before any command is declared; the flag stays declared
  // below for --help and for CLI11's own checks.
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::printf("%s\n", version_text().c_str());
    return 0;
  }
  CLI::App root{"mtrain: launch, configure and benchmark distributed training", "mtrain"};
  root.set_version_flag("--version", version_text);
  root.require_subcommand(1);
  root.footer("Run `mtrain <command> --help` for a command's options.");
  // Usage and examples first in every command's --help (subcommands inherit the formatter).
  root.formatter(std::make_shared<mtrain::completion::HelpFormatter>());
  mtrain::app::Exit exit;
  mtrain::app::declare_commands(root, exit, argc > 1 ? argv[1] : "");
  mtrain::app::add_unbuilt(root, exit);
  try {
    // A first word that names no command: say which one was probably meant (CLI11 alone says
    // only "A subcommand is required").
    if (argc > 1 && argv[1][0] != '-' && std::string(argv[1]) != "--") {
      std::vector<std::string> names;  // the visible ones, for the suggestion
      bool known = false;
      for (CLI::App* sub : root.get_subcommands([](const CLI::App*) { return true; })) {
        known = known || sub->check_name(argv[1]);
        if (!sub->get_group().empty() && sub->get_name().rfind("__", 0) != 0) names.push_back(sub->get_name());
      }
      if (!known) {
        const auto near = mtrain::str::closest(argv[1], names);
        throw mtrain::Error(fmt::format("'{}' is not an mtrain command", argv[1]),
                            (near ? fmt::format("Did you mean '{}'? ", *near) : std::string()) + "Commands: " +
                                mtrain::str::join(names, ", ") + "; `mtrain --help` says what each does.");
      }
    }
    std::vector<std::string> words(argv + 1, argv + argc);
    auto dd = std::find(words.begin(), words.end(), std::string("--"));
    if (dd != words.end()) {
      exit.has_dashdash = true;
      exit.after_dashdash.assign(dd + 1, words.end());
      words.erase(dd, words.end());
    }
    // A subcommand may rewrite its words before CLI11 sees them (launch: foreign flag spellings).
    if (!words.empty()) {
      auto rw = exit.rewrite.find(words[0]);
      if (rw != exit.rewrite.end()) {
        std::vector<std::string> rest = rw->second(std::vector<std::string>(words.begin() + 1, words.end()));
        words.resize(1);
        words.insert(words.end(), rest.begin(), rest.end());
      }
    }
    std::vector<std::string> args(words.rbegin(), words.rend());  // CLI11 wants them reversed
    root.parse(args);
  } catch (const CLI::ParseError& e) {
    int rc = root.exit(e);
    return rc == 0 ? 0 : mtrain::kExitUsage;
  } catch (const mtrain::Error& e) {
    std::fprintf(stderr, "%s\n", e.paragraph().c_str());
    return mtrain::exit_code_of(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return mtrain::exit_code_of(e);
  }
  return exit.code;
}

// Nothing may escape main (that is std::terminate, a core dump): what run_mtrain's own handlers do
// not catch — std::bad_alloc while the commands are declared, an exception of no std type — ends
// here with one line and exit 1.
int main(int argc, char** argv) {
  try {
    return run_mtrain(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "error: an exception that is no std::exception\n");
  }
  return mtrain::kExitFailure;
}

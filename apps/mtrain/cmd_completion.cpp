// `mtrain completion bash|zsh|fish`: the completion script generated from this very command tree;
// and the hidden `mtrain __complete KIND …` the scripts call for values known only at Tab time;
// the hidden `mtrain __man DIR` writes the manual pages from the same tree (the build runs it).
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "lib/completion/help.hpp"
#include "lib/completion/model.hpp"
#include "lib/core/error.hpp"
#include "lib/envreport/run_command.hpp"
#include "generated/version.hpp"
#include "lib/config/cli_flags.hpp"

namespace mtrain::app {

// The scripts and the pages describe every command, so each first has its options built
// (Exit::build_all); any other run builds only its own command's.
void build_completion(CLI::App* sub, Exit& exit) {
  auto shell = std::make_shared<completion::Shell>(completion::Shell::Bash);
  CLI::App& root = *sub->get_parent();
  config::add_choice_option(*sub, "shell", *shell, "bash, zsh or fish")->required();
  sub->footer("Load it: bash `source <(mtrain completion bash)`; zsh `source <(mtrain completion zsh)` (after compinit); "
              "fish `mtrain completion fish | source`.\n\n" +
              completion::examples_block({{"source <(mtrain completion bash)", "Tab completion in this bash"},
                                          {"mtrain completion fish > ~/.config/fish/completions/mtrain.fish", ""}}));
  sub->callback([shell, &root, &exit] {
    exit.build_all();
    auto cmds = completion::describe(root, completion::default_hints());
    std::cout << completion::script(*shell, cmds);
    exit.code = 0;
  });
}

namespace {

// The build writes the pages into its own tree: a page that cannot be written fails it (exit 1).
void write_pages(const std::string& dir, const std::vector<completion::ManPage>& pages) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (const auto& p : pages) {
    const auto path = std::filesystem::path(dir) / p.file;
    std::ofstream f(path);
    f << p.text;
    if (!f.flush())
      throw RuntimeFailure(fmt::format("cannot write the manual page {}", path.string()),
                           "Check the folder is writable.");
  }
}

}  // namespace

void build_man(CLI::App* man, Exit& exit) {
  auto dir = std::make_shared<std::string>();
  CLI::App& root = *man->get_parent();
  man->add_option("dir", *dir, "Folder for the pages")->required();
  man->callback([dir, &root, &exit] {
    exit.build_all();
    write_pages(*dir, completion::man_pages(completion::describe(root, completion::default_hints()), kVersion));
    exit.code = 0;
  });
}

void build_complete(CLI::App* dyn, Exit& exit) {
  dyn->allow_extras();
  dyn->prefix_command();
  dyn->callback([dyn, &exit] {
    auto args = exit.program(dyn->remaining());
    exit.code = 0;
    if (args.empty()) return;
    const std::string kind = args[0];
    args.erase(args.begin());
    auto run = [](const std::vector<std::string>& argv) {
      envreport::RunOptions o;
      o.timeout_ms = 3000;  // a slow controller must not freeze the prompt
      auto r = envreport::run_command(argv, o);
      return r.started && r.rc == 0 ? r.out : std::string();
    };
    for (const auto& v : completion::dynamic_values(kind, args, run)) std::cout << v << "\n";
  });
}

}  // namespace mtrain::app

// `mtrain completion bash|zsh|fish`: the completion script generated from this very command tree;
// and the hidden `mtrain __complete KIND …` the scripts call for values known only at Tab time;
// the hidden `mtrain __man DIR` writes the manual pages from the same tree (the build runs it).
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "mtrain/completion/help.hpp"
#include "mtrain/completion/model.hpp"
#include "mtrain/config/cli_flags.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/envreport/run_command.hpp"
#include "mtrain/version.hpp"

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

void build_man(CLI::App* man, Exit& exit) {
  auto dir = std::make_shared<std::string>();
  CLI::App& root = *man->get_parent();
  man->add_option("dir", *dir, "Folder for the pages")->required();
  man->callback([dir, &root, &exit] {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    exit.build_all();
    for (const auto& p : completion::man_pages(completion::describe(root, completion::default_hints()), kVersion)) {
      const auto path = std::filesystem::path(*dir) / p.file;
      std::ofstream f(path);
      f << p.text;
      if (!f.flush()) throw Error(fmt::format("cannot write the manual page {}", path.string()), "Check the folder is writable.");
    }
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

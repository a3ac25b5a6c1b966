// `mtrain completion bash|zsh|fish`: the completion script generated from this very command tree;
// and the hidden `mtrain __complete KIND …` the scripts call for values known only at Tab time;
// the hidden `mtrain __man DIR` writes the manual pages from the same tree (the build runs it).
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>

#include "commands.hpp"
#include "mtrain/completion/model.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/envreport/run_command.hpp"
#include "mtrain/version.hpp"

namespace mtrain::app {

void add_completion(CLI::App& root, Exit& exit) {
  auto shell = std::make_shared<std::string>();
  auto* sub = root.add_subcommand("completion", "Print a shell completion script for bash, zsh or fish");
  sub->add_option("shell", *shell, "bash, zsh or fish")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));
  sub->footer("Load it: bash `source <(mtrain completion bash)`; zsh `source <(mtrain completion zsh)` (after compinit); "
              "fish `mtrain completion fish | source`.");
  sub->callback([shell, &root, &exit] {
    auto cmds = completion::describe(root, completion::default_hints());
    std::cout << (*shell == "bash" ? completion::bash_script(cmds)
                  : *shell == "zsh" ? completion::zsh_script(cmds)
                                    : completion::fish_script(cmds));
    exit.code = 0;
  });

  auto dir = std::make_shared<std::string>();
  auto* man = root.add_subcommand("__man", "Write the manual pages (mtrain.1, mtrain-launch.1, ...) into DIR");
  man->group("");
  man->add_option("dir", *dir, "Folder for the pages")->required();
  man->callback([dir, &root, &exit] {
    std::error_code ec;
    std::filesystem::create_directories(*dir, ec);
    for (const auto& p : completion::man_pages(completion::describe(root, completion::default_hints()), kVersion)) {
      const auto path = std::filesystem::path(*dir) / p.file;
      std::ofstream f(path);
      f << p.text;
      if (!f.flush()) throw Error(fmt::format("cannot write the manual page {}", path.string()), "Check the folder is writable.");
    }
    exit.code = 0;
  });

  auto* dyn = root.add_subcommand("__complete", "Values for the completion scripts");
  dyn->group("");
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

#pragma once
// Shell completion, generated from the CLI11 definition itself: describe() walks the App tree
// (subcommands, options, whether each takes a value, the choices of its IsMember validator) into
// a plain model, and one renderer per shell writes that model into a script with a small
// engine. Values that depend on the machine or the command line (strategies and models from the
// settings registry, hosts from the --hostfile on the line, Slurm partitions, YAML files) are
// asked from the hidden `mtrain __complete KIND …` when Tab is pressed.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/completion/help.hpp"
#include "lib/config/choice_table.hpp"

namespace mtrain::completion {
// The shells `mtrain completion SHELL` writes a script for.
enum class Shell { Bash, Zsh, Fish };
}  // namespace mtrain::completion

namespace mtrain::config {
template <>
struct ChoiceTable<completion::Shell> {
  static constexpr const char* what = "shell";
  static constexpr ChoiceRow<completion::Shell> rows[] = {
      {completion::Shell::Bash, "bash"}, {completion::Shell::Zsh, "zsh"}, {completion::Shell::Fish, "fish"}};
};
}  // namespace mtrain::config

namespace mtrain::completion {

struct OptionSpec {
  std::vector<std::string> names;    // "--strategy", "-m"
  bool takes_value = false;
  std::vector<std::string> choices;  // fixed values
  std::string dynamic;               // "" | strategies | models | hosts | partitions | yaml | files | settings
  std::string help;
  std::string value_name;            // "TEXT", "INT:{text,json}" as CLI11 names the value (for man pages)
};

struct PositionalSpec {
  std::string name;  // "shell", "DIR"
  std::string help;
  bool required = false;
  bool many = false;  // takes several words
};

struct CommandSpec {
  std::string path;                       // "mtrain", "mtrain slurm submit"
  std::vector<std::string> subcommands;   // names, in definition order
  std::vector<std::string> sub_help;      // one line each
  std::vector<OptionSpec> options;
  bool takes_program = false;             // free words after the options (launch's PROGRAM)
  std::string description;                // the command's own one-line description
  std::string footer;                     // the paragraph after its --help, without its examples
  std::vector<Example> examples;          // the footer's "Examples:" block (help.hpp)
  std::vector<PositionalSpec> positionals;
};

// How option names map to dynamic values, and extra options for commands that define theirs at
// run time (key: command path).
struct Hints {
  std::map<std::string, std::string> dynamic_by_option;  // "--strategy" → "strategies"
  std::map<std::string, std::vector<std::string>> choices_by_option;  // "--model" → registry
  std::map<std::string, std::vector<OptionSpec>> extra_options;
};

// The hints of this mtrain: registry choices and the dynamic kinds above.
Hints default_hints();

// Hidden subcommands (group "", or named __*) are left out.
std::vector<CommandSpec> describe(const CLI::App& root, const Hints& hints);

std::string bash_script(const std::vector<CommandSpec>& cmds);
std::string zsh_script(const std::vector<CommandSpec>& cmds);
std::string fish_script(const std::vector<CommandSpec>& cmds);
// The script for `shell`.
std::string script(Shell shell, const std::vector<CommandSpec>& cmds);

// Manual pages in roff (man(7)) from the same model, so they never drift from the CLI: mtrain(1)
// and one per subcommand (mtrain-launch(1), mtrain-slurm-submit(1), …). `version` goes in the
// footer line. Each page: {file name "mtrain-launch.1", its text}.
struct ManPage {
  std::string file;
  std::string text;
};
std::vector<ManPage> man_pages(const std::vector<CommandSpec>& cmds, const std::string& version);

// `mtrain __complete KIND [ARG…]`: candidates, one per line. KIND: strategies, models,
// partitions, hosts [--hostfile FILE], yaml PREFIX. Unknown kinds give nothing (completion must
// never print errors into the user's prompt).
using Runner = std::function<std::string(const std::vector<std::string>& argv)>;  // stdout of a command, "" on failure
std::vector<std::string> dynamic_values(const std::string& kind, const std::vector<std::string>& args, const Runner& run);

}  // namespace mtrain::completion

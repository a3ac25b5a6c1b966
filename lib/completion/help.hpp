#pragma once
// --help for a person, from the same CLI11 tree as the completion scripts and man pages: a
// command's examples are the block of its footer that starts with the line "Examples:" (one
// command a line, "  # why" after it optional), so --help, the man page's EXAMPLES and the
// completion model read one text. HelpFormatter shows the usage line (with [--] [PROGRAM
// [ARGS...]] for a command that runs a program) and the examples first, the options after.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace mtrain::completion {

struct Example {
  std::string command;  // "mtrain launch --nproc-per-node 2 train.py"
  std::string why;      // "two ranks of your script", or ""
};

struct FooterParts {
  std::string text;               // the footer without its examples
  std::vector<Example> examples;  // in the order written
};

FooterParts split_footer(const std::string& footer);

// "Examples:\n  mtrain x  # why\n…" as a footer block, for a command's footer.
std::string examples_block(const std::vector<Example>& examples);

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override;
  std::string make_footer(const CLI::App* app) const override;
};

}  // namespace mtrain::completion

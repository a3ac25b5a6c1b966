#include "lib/completion/help.hpp"

#include <sstream>

#include <fmt/format.h>

#include "lib/core/strings.hpp"

namespace mtrain::completion {

namespace {
constexpr const char* kHeading = "Examples:";
}

FooterParts split_footer(const std::string& footer) {
  FooterParts p;
  const size_t at = footer.rfind(std::string(kHeading) + "\n");
  if (at == std::string::npos || (at != 0 && footer[at - 1] != '\n')) {
    p.text = footer;
    return p;
  }
  p.text = str::trim(footer.substr(0, at));
  std::istringstream in(footer.substr(at + std::string(kHeading).size() + 1));
  for (std::string line; std::getline(in, line);) {
    line = str::trim(line);
    if (line.empty()) continue;
    const size_t hash = line.find("  # ");
    if (hash == std::string::npos) {
      p.examples.push_back({line, ""});
    } else {
      p.examples.push_back({str::trim(line.substr(0, hash)), str::trim(line.substr(hash + 4))});
    }
  }
  return p;
}

std::string examples_block(const std::vector<Example>& examples) {
  std::string out = std::string(kHeading) + "\n";
  for (const auto& e : examples) out += "  " + e.command + (e.why.empty() ? "" : "  # " + e.why) + "\n";
  return out;
}

std::string HelpFormatter::make_usage(const CLI::App* app, std::string name) const {
  std::string usage = CLI::Formatter::make_usage(app, name);
  // CLI11 says nothing of the free words a prefix command keeps (launch's program).
  if (app->get_prefix_command() && !usage.empty() && usage.back() == '\n')
    usage.insert(usage.size() - 1, " [--] [PROGRAM [ARGS...]]");
  const FooterParts parts = split_footer(app->get_footer());
  if (parts.examples.empty()) return usage;
  usage += "\n" + std::string(kHeading) + "\n";
  for (const auto& e : parts.examples) {
    usage += "  " + e.command + "\n";
    if (!e.why.empty()) usage += "      " + e.why + "\n";
  }
  return usage;
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  const std::string text = split_footer(app->get_footer()).text;
  return text.empty() ? "" : text + "\n";
}

}  // namespace mtrain::completion

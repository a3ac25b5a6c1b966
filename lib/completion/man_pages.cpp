// Manual pages from the completion model (the CLI11 tree as describe() sees it): the build runs
// the hidden `mtrain __man DIR` and installs what it writes, so a page is never older than the
// flags it documents. roff kept to the man(7) macros every formatter knows (.TH .SH .TP .B .I).
#include <fmt/format.h>

#include <algorithm>

#include "mtrain/completion/model.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain::completion {

namespace {

// Text for roff: backslashes escaped, a line that would start with a control character ('.' or
// '\'') protected by the zero-width \&, and hyphens made real minus signs (so `--flag` can be
// copied from the rendered page and searched for).
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (line_start && (ch == '.' || ch == '\'')) out += "\\&";
    const auto byte = static_cast<unsigned char>(ch);
    if (byte >= 0x80) {
      // UTF-8 (help texts use —, …, →, ×, Ψ) as groff's \[uXXXX], so the page needs no input
      // encoding and formats warning-free with any troff.
      const int extra = byte >= 0xF0 ? 3 : byte >= 0xE0 ? 2 : byte >= 0xC0 ? 1 : 0;
      unsigned cp = extra == 3 ? byte & 0x07u : extra == 2 ? byte & 0x0Fu : byte & 0x1Fu;
      for (int k = 0; k < extra && i + 1 < text.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[++i]) & 0x3Fu);
      out += extra == 0 ? std::string("?") : fmt::format("\\[u{:04X}]", cp);
    } else if (ch == '\\') {
      out += "\\e";
    } else if (ch == '-') {
      out += "\\-";
    } else {
      out += ch;
    }
    line_start = ch == '\n';
  }
  return out;
}

std::string page_name(const std::string& path) {
  std::string n = path;
  std::replace(n.begin(), n.end(), ' ', '-');
  return n;
}

std::string upper(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return s;
}

// "TEXT:{text,json}" → "TEXT"; "" for a flag.
std::string value_word(const OptionSpec& o) {
  if (!o.takes_value) return "";
  std::string v = o.value_name.substr(0, o.value_name.find(':'));
  return v.empty() ? "VALUE" : v;
}

std::string render(const CommandSpec& c, const std::string& version) {
  const std::string name = page_name(c.path);
  std::string t = fmt::format(".TH {} 1 \"\" \"mtrain {}\" \"mtrain manual\"\n", upper(roff(name)), version);
  t += ".SH NAME\n" + roff(name) + " \\- " + roff(c.description) + "\n";

  t += ".SH SYNOPSIS\n.B " + roff(c.path) + "\n";
  if (!c.options.empty()) t += "[\\fIOPTIONS\\fR]\n";
  if (!c.subcommands.empty()) t += "\\fICOMMAND\\fR [\\fIARGS\\fR]\n";
  for (const auto& p : c.positionals) {
    const std::string w = "\\fI" + roff(p.name) + "\\fR" + (p.many ? "..." : "");
    t += (p.required ? w : "[" + w + "]") + "\n";
  }
  if (c.takes_program) t += "[\\fB\\-\\-\\fR] [\\fIPROGRAM\\fR [\\fIARGS\\fR...]]\n";

  t += ".SH DESCRIPTION\n" + roff(c.description) + ".\n";
  if (!str::trim(c.footer).empty()) t += ".PP\n" + roff(str::trim(c.footer)) + "\n";

  if (!c.subcommands.empty()) {
    t += ".SH COMMANDS\n";
    for (size_t i = 0; i < c.subcommands.size(); ++i)
      t += ".TP\n.B " + roff(c.subcommands[i]) + "\n" + roff(c.sub_help[i]) +
           fmt::format(". See \\fB{}\\fR(1).\n", roff(page_name(c.path + " " + c.subcommands[i])));
  }
  if (!c.positionals.empty()) {
    t += ".SH ARGUMENTS\n";
    for (const auto& p : c.positionals) t += ".TP\n.I " + roff(p.name) + "\n" + roff(p.help) + "\n";
  }
  if (!c.options.empty()) {
    t += ".SH OPTIONS\n";
    for (const auto& o : c.options) {
      std::string head;
      for (const auto& n : o.names) head += (head.empty() ? "" : ", ") + std::string("\\fB") + roff(n) + "\\fR";
      if (o.takes_value) head += " \\fI" + roff(value_word(o)) + "\\fR";
      t += ".TP\n" + head + "\n" + roff(o.help.empty() ? "(no description)" : o.help) + "\n";
      if (!o.choices.empty()) t += ".br\nOne of: " + roff(str::join(o.choices, ", ")) + ".\n";
    }
  }

  // See also: the parent and the children, then the other top-level pages from mtrain(1).
  std::vector<std::string> see;
  const auto sp = c.path.rfind(' ');
  if (sp != std::string::npos) see.push_back(page_name(c.path.substr(0, sp)));
  for (const auto& s : c.subcommands) see.push_back(page_name(c.path + " " + s));
  if (!see.empty()) {
    t += ".SH SEE ALSO\n";
    for (size_t i = 0; i < see.size(); ++i)
      t += fmt::format("\\fB{}\\fR(1){}\n", roff(see[i]), i + 1 < see.size() ? "," : "");
  }
  return t;
}

}  // namespace

std::vector<ManPage> man_pages(const std::vector<CommandSpec>& cmds, const std::string& version) {
  std::vector<ManPage> out;
  for (const auto& c : cmds) out.push_back({page_name(c.path) + ".1", render(c, version)});
  return out;
}

}  // namespace mtrain::completion

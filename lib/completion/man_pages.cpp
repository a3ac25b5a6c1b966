// Manual pages from the completion model (the CLI11 tree as describe() sees it): the build runs
// the hidden `mtrain __man DIR` and installs what it writes, so a page is never older than the
// flags it documents. roff kept to the man(7) macros every formatter knows (.TH .SH .TP .B .I).
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "lib/completion/model.hpp"
#include "lib/core/strings.hpp"

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

// A footer as roff: plain lines are filled into paragraphs (a blank line starts the next); an
// indented line "  TERM   what it means" (a column list, as --help aligns it) becomes a .TP
// item, since filled and justified it broke into ragged columns (issue 45).
std::string footer_roff(const std::string& footer) {
  std::string out = ".PP\n";
  std::istringstream in(footer);
  bool in_list = false;
  for (std::string line; std::getline(in, line);) {
    if (str::trim(line).empty()) {
      out += ".PP\n";
      in_list = false;
      continue;
    }
    if (line.size() > 2 && line[0] == ' ' && line[1] == ' ') {
      const std::string item = str::trim(line);
      const size_t gap = item.find("  ");
      const std::string term = gap == std::string::npos ? item : item.substr(0, gap);
      const std::string what = gap == std::string::npos ? "" : str::trim(item.substr(gap));
      out += ".TP\n" + roff(term) + "\n" + (what.empty() ? "" : roff(what) + "\n");
      in_list = true;
      continue;
    }
    if (in_list) out += ".PP\n";
    in_list = false;
    out += roff(line) + "\n";
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
  if (!str::trim(c.footer).empty()) t += footer_roff(c.footer);

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

  // Every page says how to use it and what its exit code means: man-pages(7)'s EXAMPLES and
  // EXIT STATUS. Each example is a no-fill line (a command must not wrap) under its reason.
  t += ".SH EXAMPLES\n";
  if (c.examples.empty()) {
    t += ".PP\nThe options of this command:\n.PP\n.RS 4\n.nf\n" + roff(c.path) + " \\-\\-help\n.fi\n.RE\n";
  }
  for (const auto& e : c.examples) {
    t += ".PP\n" + (e.why.empty() ? "" : roff(e.why) + ":\n") + ".RS 4\n.nf\n" + roff(e.command) + "\n.fi\n.RE\n";
  }
  t += ".SH EXIT STATUS\n"
       ".TP\n.B 0\nSuccess.\n"
       ".TP\n.B 1\nThe work was started and failed (a run, a write, a command it ran).\n"
       ".TP\n.B 2\nBad input: a flag, a value, a file or a job that is not valid; nothing was started.\n";
  if (c.takes_program)
    t += ".PP\nWhen a rank fails, " + roff(c.path) +
         " exits with the exit code of the first rank to fail (the root cause of its failure report); "
         "preempted (USR1 or USR2), the bundled trainer saves a checkpoint and exits 138.\n";

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
  out.reserve(cmds.size());
  for (const auto& c : cmds) out.push_back({page_name(c.path) + ".1", render(c, version)});
  return out;
}

}  // namespace mtrain::completion

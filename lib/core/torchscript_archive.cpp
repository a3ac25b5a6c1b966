#include "mtrain/core/torchscript_archive.hpp"

#include <cctype>
#include <unordered_set>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/core/zip_reader.hpp"

namespace mtrain {

namespace {

bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier starting at `i`, or "" (advances nothing).
std::string ident_at(const std::string& s, size_t i) {
  size_t j = i;
  if (j >= s.size() || std::isdigit(static_cast<unsigned char>(s[j]))) return "";
  while (j < s.size() && ident_char(s[j])) ++j;
  return s.substr(i, j - i);
}

}  // namespace

std::string TorchScriptArchive::saved_by() const {
  std::string v = format_version >= 0 ? fmt::format("file format {}", format_version) : "no version record";
  return has_byteorder ? fmt::format("PyTorch 2.x ({}, with the byteorder record 2.x writes)", v)
                       : fmt::format("PyTorch 1.x ({}, no byteorder record)", v);
}

std::vector<OperatorUse> operators_in_code(const std::string& code, const std::string& file) {
  std::vector<OperatorUse> out;
  std::unordered_set<std::string> seen;
  int line = 1;
  auto add = [&](std::string name) {
    if (seen.insert(name).second) out.push_back({std::move(name), fmt::format("{}:{}", file, line)});
  };
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '\n') {
      ++line;
      continue;
    }
    if (c == '#') {  // a comment runs to the end of the line
      while (i + 1 < code.size() && code[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {  // string literals (printed with escapes, one line each)
      for (++i; i < code.size() && code[i] != c && code[i] != '\n'; ++i)
        if (code[i] == '\\') ++i;
      continue;
    }
    if (!ident_char(c) || (i > 0 && (ident_char(code[i - 1]) || code[i - 1] == '.'))) continue;
    const std::string head = ident_at(code, i);
    if (head.empty()) continue;
    size_t j = i + head.size();
    if (head == "torch" || head == "ops") {
      if (j >= code.size() || code[j] != '.') { i = j - 1; continue; }
      std::string ns = "aten", name = ident_at(code, j + 1);
      size_t k = j + 1 + name.size();
      if (head == "ops" || name == "ops") {  // ops.<ns>.<name> (torch.ops.<ns>.<name> in user-written code)
        if (head == "torch") {
          if (k >= code.size() || code[k] != '.') { i = k - 1; continue; }
          name = ident_at(code, k + 1), k += 1 + name.size();
        }
        ns = name;
        if (k >= code.size() || code[k] != '.') { i = k - 1; continue; }
        name = ident_at(code, k + 1), k += 1 + name.size();
      }
      if (!name.empty() && !ns.empty() && k < code.size() && code[k] == '(') add(ns + "::" + name);
      i = k - 1;
    } else {
      i = j - 1;
    }
  }
  return out;
}

std::vector<SetStateMethod> setstate_methods(const std::string& code, const std::string& file) {
  std::vector<SetStateMethod> out;
  const auto lines = str::split(code, '\n');
  auto indent = [](const std::string& l) { return l.find_first_not_of(' '); };
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t at = lines[i].find("def __setstate__(");
    if (at == std::string::npos || indent(lines[i]) != at) continue;
    // The body: the following lines indented deeper than `def` (the signature may wrap).
    std::string body;
    size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const size_t ind = indent(lines[j]);
      if (ind != std::string::npos && ind <= at) break;
      body += lines[j] + "\n";
    }
    SetStateMethod m{fmt::format("{}:{}", file, i + 1), operators_in_code(body, file)};
    for (auto& c : m.calls) {  // operators_in_code counts from the body's first line
      const auto colon = c.where.rfind(':');
      c.where = fmt::format("{}:{}", file, i + 1 + std::stoul(c.where.substr(colon + 1)));
    }
    out.push_back(std::move(m));
    i = j - 1;
  }
  return out;
}

TorchScriptArchive read_torchscript_archive(const std::string& path) {
  ZipReader zip(path, kTorchScriptZip);
  return scan_torchscript_archive(zip);
}

TorchScriptArchive scan_torchscript_archive(ZipReader& zip) {
  TorchScriptArchive a;
  a.prefix = zip.prefix().empty() ? "" : zip.prefix().substr(0, zip.prefix().size() - 1);
  bool has_code = false;
  for (const auto& r : zip.records()) has_code = has_code || str::starts_with(zip.name(r), "code/");
  const bool no_pickle = a.prefix.empty() || zip.find("data.pkl") == nullptr;
  if (no_pickle || !has_code)
    throw Error(fmt::format("'{}' is not a TorchScript archive: the zip has no {}", zip.path(),
                            no_pickle ? "<folder>/data.pkl record" : "code/ records (a torch.save file, e.g. a state dict)"),
                "a TorchScript model is written by torch.jit.save(torch.jit.script(module), PATH); weights saved "
                "with torch.save or safetensors go to --init");
  for (const char* name : {"version", ".data/version"}) {
    if (zip.find(name) == nullptr) continue;
    if (auto n = str::parse_uint(str::trim(zip.read_all(name, kMaxTorchScriptRecord)))) a.format_version = static_cast<int64_t>(*n);
    break;
  }
  a.has_byteorder = zip.find("byteorder") != nullptr;
  std::unordered_set<std::string> seen;
  for (const auto& r : zip.records()) {
    const std::string name(zip.name(r));
    if (!str::starts_with(name, "code/") || !str::ends_with(name, ".py")) continue;
    const std::string code = zip.read_all(name, kMaxTorchScriptRecord);
    for (auto& use : operators_in_code(code, name))
      if (seen.insert(use.name).second) a.operators.push_back(std::move(use));
    for (auto& m : setstate_methods(code, name)) a.setstates.push_back(std::move(m));
  }
  return a;
}

}  // namespace mtrain

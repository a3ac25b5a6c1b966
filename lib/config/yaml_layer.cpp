#include "lib/config/yaml_layer.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "lib/config/import.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/error.hpp"
#include "lib/core/yaml_input.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

std::string Position::str() const {
  if (line <= 0) return file;
  return fmt::format("{}:{}:{}", file, line, column);
}

std::string Issue::text() const {
  std::string out = fmt::format("{}: {}: {}", where.str(), error ? "error" : "warning", message);
  if (!hint.empty()) {
    if (out.back() != '.' && out.back() != '?') out += '.';
    out += ' ' + hint;
  }
  return out;
}

namespace {

// The input limits' paragraphs start with the file; an Issue prints its position itself.
std::string without_origin(const std::string& message, const std::string& origin) {
  return str::starts_with(message, origin + ": ") ? message.substr(origin.size() + 2) : message;
}

Position at(const std::string& file, const YAML::Mark& m) {
  if (m.line < 0) return {file, 0, 0};
  return {file, m.line + 1, m.column + 1};
}

struct Walker {
  const Registry& reg;
  std::string file;
  YamlLayer& out;
  std::set<std::string> prefixes;  // every dotted prefix of a key that is not itself a key

  void issue(const YAML::Mark& m, std::string key, std::string message, std::string hint) {
    if (out.issues.size() >= kMaxIssues) {
      ++out.issues_dropped;
      return;
    }
    out.issues.push_back({true, at(file, m), std::move(key), std::move(message), std::move(hint)});
  }

  void leaf(const Setting& s, const YAML::Node& k, const YAML::Node& v) {
    if (v.IsNull()) {  // a missing value has no position of its own: point at its key
      issue(k.Mark(), s.key, fmt::format("setting '{}' has no value", s.key),
            fmt::format("It takes {}; delete the line to keep the default {}.", describe_type(s),
                        s.default_value.dump()));
      return;
    }
    if (s.list && v.IsSequence()) {
      // A list setting (slurm.setup …): each item a plain value, checked as the setting's type.
      Setting item = s;
      item.list = false;
      json items = json::array();
      for (const auto& one : v) {
        if (!one.IsScalar()) {
          issue(one.Mark(), s.key, fmt::format("the items of '{}' must be plain values", s.key), "Write - value lines.");
          return;
        }
        try {
          items.push_back(reg.parse_text(item, one.Scalar()));
        } catch (const Error& e) {
          issue(one.Mark(), s.key, e.message(), e.hint());
          return;
        }
      }
      out.layer.values[s.key] = items;
      out.positions[s.key] = at(file, v.Mark());
      return;
    }
    if (!v.IsScalar()) {
      issue(v.Mark(), s.key,
            fmt::format("setting '{}' got a {}", s.key, v.IsSequence() ? "list" : "mapping"),
            fmt::format("It takes a single value: {}.", describe_type(s)));
      return;
    }
    std::string text = v.Scalar();
    // yaml-cpp decodes escapes and UTF-16/32 input into bytes that need not be UTF-8 (lone
    // surrogates); the value becomes JSON, whose dump throws on them.
    if (str::invalid_utf8_at(text)) {
      issue(v.Mark(), s.key, fmt::format("the value of '{}' is not valid UTF-8 text", s.key), "Save the file as UTF-8.");
      return;
    }
    // YAML writes booleans in several spellings (True, YES); the registry speaks lowercase.
    if (s.type == Type::Bool) text = [&] { std::string t = text; for (auto& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c))); return t; }();
    try {
      out.layer.values[s.key] = reg.parse_text(s, text);
      out.positions[s.key] = at(file, v.Mark());
    } catch (const Error& e) {
      issue(v.Mark(), s.key, e.message(), e.hint());
    }
  }

  // The key as written, else (slurm.* only) with '-' for '_': `mtrain slurm`'s flags are spelled
  // gpus-per-node, and its job file section has always taken both spellings.
  const Setting* find_setting(const std::string& full) const {
    if (const Setting* s = reg.find(full)) return s;
    std::string alt = full;
    std::replace(alt.begin(), alt.end(), '-', '_');
    const Setting* s = reg.find(alt);
    return s && s->scope == Scope::Slurm ? s : nullptr;
  }

  void walk(const YAML::Node& node, const std::string& prefix) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      // Copies: yaml-cpp's iterator yields a temporary pair, so references to its members
      // dangle after this statement (ASan: stack-use-after-scope, found by fuzz_job_yaml).
      const YAML::Node k = it->first;
      const YAML::Node v = it->second;
      if (!k.IsScalar()) {
        issue(k.Mark(), "", "a key must be a plain name", "Write settings as name: value.");
        continue;
      }
      const std::string full = prefix.empty() ? k.Scalar() : prefix + "." + k.Scalar();
      auto dup = seen.find(full);
      if (dup != seen.end()) {
        issue(k.Mark(), full, fmt::format("'{}' is given twice (first at line {})", full, dup->second.line + 1),
              "Keep one; YAML readers disagree on which one wins.");
        continue;
      }
      seen.emplace(full, k.Mark());
      if (const Setting* s = find_setting(full); s && s->per_invocation) {
        auto [message, hint] = per_invocation_refusal(*s, out.layer.source == Source::UserFile ? "the user file" : "a job file");
        issue(k.Mark(), full, std::move(message), std::move(hint));
      } else if (s) {
        leaf(*s, k, v);
      } else if (prefixes.count(full)) {
        if (v.IsMap()) {
          walk(v, full);
        } else {
          issue(v.Mark(), full, fmt::format("'{}' is a group of settings, not a value", full),
                fmt::format("Write it as a mapping, e.g. {}: {{{}: …}}", k.Scalar(), first_child(full)));
        }
      } else {
        std::vector<std::string> candidates;
        if (v.IsMap())
          candidates.assign(prefixes.begin(), prefixes.end());
        else
          candidates = reg.keys();
        auto near = str::closest(full, candidates);
        issue(k.Mark(), full, fmt::format("unknown setting '{}'", full),
              near ? fmt::format("Did you mean '{}'? `mtrain config docs` lists every setting.", *near)
                   : "`mtrain config docs` lists every setting.");
      }
    }
  }

  std::string first_child(const std::string& prefix) const {
    for (const auto& s : reg.all())
      if (s.key.rfind(prefix + ".", 0) == 0) return s.key.substr(prefix.size() + 1);
    return "…";
  }
};

}  // namespace

YamlLayer parse_yaml_layer(const Registry& reg, const std::string& text, const std::string& origin,
                           Source source) {
  YamlLayer out;
  out.layer.source = source;
  out.layer.origin = origin;
  YamlDocument doc = read_yaml_document(text, origin);  // UTF-8, limits, syntax
  if (doc.problem) {
    const YamlProblem& p = *doc.problem;
    out.issues.push_back({true, {origin, p.line, p.column}, "", p.message, p.hint});
    return out;
  }
  const YAML::Node& root = doc.root;
  if (!root || root.IsNull()) return out;  // an empty file sets nothing
  if (!root.IsMap()) {
    out.issues.push_back({true, at(origin, root.Mark()), "", "a job file must be a mapping of settings",
                          "Write one setting per line, e.g. strategy: zero2"});
    return out;
  }
  Walker w{reg, origin, out, {}};
  for (const auto& key : reg.keys()) {
    auto parts = str::split(key, '.');
    std::string p;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      p += (i ? "." : "") + parts[i];
      if (!reg.find(p)) w.prefixes.insert(p);
    }
  }
  w.walk(root, "");
  return out;
}

// A raw DeepSpeed or accelerate config given where a job file goes (--config, config validate,
// config show): imported on the fly; the import's warnings become warnings of the file.
YamlLayer import_layer(const Registry& reg, const std::string& text, const std::string& path, Source source,
                       ImportFormat format) {
  YamlLayer out;
  out.layer.source = source;
  out.layer.origin = path;
  try {
    ImportResult r = import_text(reg, text, path);
    out.layer.values = r.values;
    out.issues.push_back({false,
                          {path, 0, 0},
                          "",
                          fmt::format("is {} {}; imported on the fly ({} settings, {} not imported)",
                                      format == ImportFormat::DeepSpeed ? "a" : "an", describe(format), r.values.size(),
                                      r.warnings.size()),
                          fmt::format("`mtrain config import {} -o job.yaml` writes it as a job file.", path)});
    for (const auto& w : r.warnings) out.issues.push_back({false, {path, 0, 0}, "", w, ""});
  } catch (const Error& e) {
    out.issues.push_back({true, {path, 0, 0}, "", e.message(), e.hint()});
  }
  return out;
}

YamlLayer read_yaml_layer(const Registry& reg, const std::string& path, Source source) {
  std::optional<std::string> text;
  YamlLayer out;
  out.layer.source = source;
  out.layer.origin = path;
  try {
    text = read_input_file(path);
  } catch (const Error& e) {  // larger than the input limit
    out.issues.push_back({true, {path, 0, 0}, "", without_origin(e.message(), path), e.hint()});
    return out;
  }
  if (!text) {
    out.issues.push_back({true, {path, 0, 0}, "", "cannot read the file",
                          "Check the path and its permissions."});
    return out;
  }
  if (auto format = detect_foreign(*text)) return import_layer(reg, *text, path, source, *format);
  out = parse_yaml_layer(reg, *text, path, source);
  from_file_folder(out.layer, path);
  return out;
}

const std::vector<std::string>& file_folder_relative_keys() {
  static const std::vector<std::string> keys = {"model.path", "model.eval_path", "model.init", "data.path",
                                                "data.val_path"};
  return keys;
}

void from_file_folder(Layer& layer, const std::string& file) {
  const std::filesystem::path folder = std::filesystem::path(file).parent_path();
  if (folder.empty() || folder == ".") return;
  for (const auto& key : file_folder_relative_keys()) {
    auto it = layer.values.find(key);
    if (it == layer.values.end() || !it->second.is_string()) continue;
    const std::string value = it->second.get<std::string>();
    if (value.empty() || std::filesystem::path(value).is_absolute()) continue;
    it->second = (folder / value).lexically_normal().string();
  }
}

std::string more_issues_line(size_t dropped) {
  if (dropped == 0) return "";
  return fmt::format("… and {} more problem{} (only the first {} are listed: fix those and check again)",
                     dropped, dropped == 1 ? "" : "s", kMaxIssues);
}

void throw_if_errors(const std::vector<Issue>& issues, const std::string& what, size_t dropped) {
  std::vector<std::string> lines;
  for (const auto& i : issues)
    if (i.error) lines.push_back(i.text());
  if (lines.empty()) return;
  if (lines.size() == 1) {
    const Issue* first = nullptr;
    for (const auto& i : issues)
      if (i.error && !first) first = &i;
    throw Error(first->message, first->hint).at(first->where.str());
  }
  if (dropped) lines.push_back(more_issues_line(dropped));
  throw Error(fmt::format("{} has {} problems:\n  {}", what, lines.size() + dropped - (dropped ? 1 : 0),
                          str::join(lines, "\n  ")),
              "Fix them all; `mtrain config validate FILE` prints the same list.");
}

Layer load_yaml_layer(const Registry& reg, const std::string& path, Source source) {
  YamlLayer y = read_yaml_layer(reg, path, source);
  throw_if_errors(y.issues, path, y.issues_dropped);
  return y.layer;
}

}  // namespace mtrain::config

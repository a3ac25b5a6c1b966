#include "lib/config/import.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "lib/config/render.hpp"
#include "lib/core/error.hpp"
#include "lib/core/visible_text.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/yaml_input.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

std::string describe(ImportFormat f) { return f == ImportFormat::DeepSpeed ? "DeepSpeed config" : "accelerate config"; }

void Importer::set(const std::string& foreign_path, const std::string& key, const json& value) {
  try {
    out_.values[key] = reg_.check_value(reg_.require(key), value);
  } catch (Error& e) {
    // foreign_path is the source's own keys: made visible (no terminal escapes from the file).
    throw Error(fmt::format("{}: {} → {}: {}", out_.origin, visible_text(foreign_path), key, e.message()), e.hint());
  }
}

void Importer::warn(const std::string& foreign_path, const std::string& why) {
  out_.warnings.push_back(foreign_path + ": " + why);
}

void Importer::unmapped(const std::string& foreign_path, const json& value) {
  warn(foreign_path, fmt::format("{} has no mtrain meaning; not imported", value.dump()));
}

namespace {

std::pair<int, int> line_col(const std::string& text, size_t byte) {
  int line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return {line, col};
}

// yaml-cpp decodes escapes and UTF-16/32 input into bytes that need not be UTF-8 (lone
// surrogates); JSON strings must be, or every later dump() throws.
const std::string& utf8_scalar(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (str::invalid_utf8_at(s))
    throw Error(fmt::format("{}:{}: text is not valid UTF-8", n.Mark().line + 1, n.Mark().column + 1),
                "Save the file as UTF-8.");
  return s;
}

json scalar_to_json(const YAML::Node& n) {
  const std::string& s = utf8_scalar(n);
  if (n.Tag() == "!") return s;  // quoted: always text
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "true" || lower == "yes" || lower == "on") return true;
  if (lower == "false" || lower == "no" || lower == "off") return false;
  try {
    size_t used = 0;
    long long v = std::stoll(s, &used);
    if (used == s.size()) return v;
  } catch (const std::logic_error&) {
  }
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::logic_error&) {
  }
  return s;
}

json node_to_json(const YAML::Node& n) {
  if (n.IsMap()) {
    json o = json::object();
    for (auto it = n.begin(); it != n.end(); ++it) o[utf8_scalar(it->first)] = node_to_json(it->second);
    return o;
  }
  if (n.IsSequence()) {
    json a = json::array();
    for (const auto& e : n) a.push_back(node_to_json(e));
    return a;
  }
  if (n.IsScalar()) return scalar_to_json(n);
  return nullptr;
}

std::string read_all(const std::string& path) {
  auto text = read_input_file(path);
  if (!text) throw Error(fmt::format("cannot read {}", path), "Check the path and its permissions.");
  return *text;
}

std::string dir_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Keys only a DeepSpeed config has at its top level (mtrain's sections are other words).
bool has_deepspeed_key(const json& doc) {
  for (const char* k : {"zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "fp16", "bf16",
                        "gradient_accumulation_steps", "gradient_clipping", "steps_per_print", "optimizer",
                        "scheduler", "wall_clock_breakdown"})
    if (doc.contains(k)) return true;
  return false;
}

bool has_accelerate_key(const json& doc) {
  for (const char* k : {"distributed_type", "compute_environment", "num_processes", "mixed_precision"})
    if (doc.contains(k)) return true;
  return false;
}

bool is_json_text(const std::string& text) {
  const std::string t = str::trim(text);
  return !t.empty() && (t[0] == '{' || str::starts_with(t, "//") || str::starts_with(t, "/*"));
}

ImportResult import_text_in(const Registry& reg, const std::string& text, const std::string& origin,
                            const std::string& base_dir) {
  if (is_json_text(text)) {
    json ds = parse_json_with_comments(text, origin);
    // `accelerate config default` writes JSON, also into default_config.yaml.
    if (ds.is_object() && has_accelerate_key(ds) && !has_deepspeed_key(ds))
      return import_accelerate(reg, ds, origin, base_dir);
    return import_deepspeed(reg, ds, origin);
  }
  json doc = yaml_to_json(text, origin);
  if (doc.is_object()) {
    if (has_accelerate_key(doc)) return import_accelerate(reg, doc, origin, base_dir);
    if (has_deepspeed_key(doc)) return import_deepspeed(reg, doc, origin);
    auto is_mtrain = [&](const std::string& k) {
      for (const auto& s : reg.all())
        if (s.key == k || s.key.rfind(k + ".", 0) == 0) return true;
      return false;
    };
    for (auto it = doc.begin(); it != doc.end(); ++it)
      if (is_mtrain(it.key()))
        throw Error(fmt::format("{} already is an mtrain job file", origin),
                    fmt::format("Check it with `mtrain config validate {}`.", origin));
  }
  throw Error(fmt::format("{} is neither a DeepSpeed config (JSON with zero_optimization, "
                          "train_batch_size, …) nor an accelerate config (YAML with "
                          "distributed_type, num_processes, …)",
                          origin),
              "Import takes the ds_config.json given to deepspeed or the file `accelerate config` wrote.");
}

}  // namespace

json parse_json_with_comments(const std::string& text, const std::string& origin) {
  try {
    return parse_json_limited(text, origin, /*ignore_comments=*/true);
  } catch (const json::out_of_range& e) {
    // A number too large for a double ("1e999"): the parser reports no position.
    std::string what = e.what();
    auto pos = what.find("number overflow");
    throw Error(fmt::format("{}: not valid JSON: {}", origin, pos == std::string::npos ? what : what.substr(pos)),
                "Write the number within the range of a double (about 1.8e308).");
  } catch (const json::parse_error& e) {
    auto [line, col] = line_col(text, e.byte > 0 ? e.byte - 1 : 0);
    std::string what = e.what();
    auto pos = what.find("syntax error");
    throw Error(fmt::format("{}:{}:{}: not valid JSON: {}", origin, line, col,
                            pos == std::string::npos ? what : what.substr(pos)),
                "DeepSpeed configs are JSON; // comments are allowed, trailing commas are not.");
  }
}

json yaml_to_json(const std::string& text, const std::string& origin) {
  const YAML::Node root = load_yaml_document(text, origin);  // UTF-8, limits, syntax: file:line:col
  try {
    return node_to_json(root);
  } catch (Error& e) {
    throw e.at(origin);
  }
}

std::optional<ImportFormat> detect_foreign(const std::string& text) {
  try {
    json doc = is_json_text(text) ? parse_json_with_comments(text, "") : yaml_to_json(text, "");
    if (!doc.is_object()) return std::nullopt;
    if (has_accelerate_key(doc)) return ImportFormat::Accelerate;
    if (has_deepspeed_key(doc)) return ImportFormat::DeepSpeed;
  } catch (const Error&) {
  }
  return std::nullopt;  // an mtrain job file, or text the job-file reader reports on
}

ImportResult import_text(const Registry& reg, const std::string& text, const std::string& origin) {
  return import_text_in(reg, text, origin, dir_of(origin));
}

ImportResult import_file(const Registry& reg, const std::string& path) {
  return import_text_in(reg, read_all(path), path, dir_of(path));
}

std::string import_yaml(const Registry& reg, const ImportResult& r) {
  YamlOptions opt;
  opt.header = {
      fmt::format("mtrain job imported from {} ({}) by `mtrain config import`.", r.origin, describe(r.format))};
  if (!r.warnings.empty()) {
    opt.header.push_back("");
    opt.header.push_back("Not imported (review these):");
    for (const auto& w : r.warnings) opt.header.push_back("  " + w);
  }
  opt.header.push_back("");
  opt.header.push_back("Every setting not listed keeps its default; see `mtrain config show --config FILE --sources`.");
  return to_yaml(reg, r.values, opt);
}

}  // namespace mtrain::config

#pragma once
// `mtrain config import FILE`: turn the files people already have into an mtrain job.
//   DeepSpeed ds_config.json (// comments and "auto" values allowed, as HuggingFace writes them)
//   accelerate config.yaml (`accelerate config` output, with deepspeed_config / fsdp_config)
// The format is detected from the content. Every key is either mapped to a setting or listed as a
// warning saying why it was not: nothing is dropped silently.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/config/choice_table.hpp"
#include "lib/config/registry.hpp"

namespace mtrain::config {

// A foreign launcher's config: read by `config import` (and a --config of that kind), written
// by `config export --to` (its names).
enum class ImportFormat { DeepSpeed, Accelerate };
template <>
struct ChoiceTable<ImportFormat> {
  static constexpr const char* what = "config kind";
  static constexpr ChoiceRow<ImportFormat> rows[] = {{ImportFormat::DeepSpeed, "deepspeed"},
                                                     {ImportFormat::Accelerate, "accelerate"}};
};
// "DeepSpeed config", "accelerate config": for messages.
std::string describe(ImportFormat f);

struct ImportResult {
  ImportFormat format = ImportFormat::DeepSpeed;
  std::string origin;
  std::map<std::string, json> values;  // setting key → checked value
  std::vector<std::string> warnings;   // "zero_optimization.sub_group_size: …", by key path
};

// Collects values and warnings while walking a foreign file; every set() is checked against
// the registry, naming the foreign key path when the value does not fit.
class Importer {
 public:
  Importer(const Registry& reg, ImportResult& out) : reg_(reg), out_(out) {}
  void set(const std::string& foreign_path, const std::string& key, const json& value);
  void warn(const std::string& foreign_path, const std::string& why);
  // The key has no mtrain meaning: listed, not imported.
  void unmapped(const std::string& foreign_path, const json& value);
  // The setting takes 'auto' itself (DeepSpeed-style bucket sizes), so "auto" imports as is.
  bool accepts_auto(const std::string& key) const { return reg_.require(key).allow_auto; }
  bool has(const std::string& key) const { return out_.values.count(key) > 0; }
  const json& value(const std::string& key) const { return out_.values.at(key); }

 private:
  const Registry& reg_;
  ImportResult& out_;
};

ImportResult import_deepspeed(const Registry& reg, const json& ds, const std::string& origin);
// `doc` is the accelerate YAML converted to JSON (see yaml_to_json); base_dir resolves
// deepspeed_config_file.
ImportResult import_accelerate(const Registry& reg, const json& doc, const std::string& origin,
                               const std::string& base_dir);

// A DeepSpeed or accelerate config (by its top-level keys), or nullopt: an mtrain job file (or
// text that is not a mapping; the job-file reader reports on it). Never throws.
std::optional<ImportFormat> detect_foreign(const std::string& text);

// Detects the format from the text and imports it.
ImportResult import_text(const Registry& reg, const std::string& text, const std::string& origin);
ImportResult import_file(const Registry& reg, const std::string& path);

// The job file for an import: the warnings as comments on top, then the values.
std::string import_yaml(const Registry& reg, const ImportResult& r);

// YAML text → JSON with YAML 1.1 scalar typing for plain scalars (quoted ones stay strings).
// Throws an Error at file:line:col on a syntax error.
json yaml_to_json(const std::string& text, const std::string& origin);
// JSON with // and /* */ comments → JSON; errors at file:line:col.
json parse_json_with_comments(const std::string& text, const std::string& origin);

}  // namespace mtrain::config

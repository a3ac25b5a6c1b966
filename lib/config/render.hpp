#pragma once
// Writing settings out: job YAML (what `config init` and `config import` write and `config show`
// prints) and JSON. The YAML is written by hand so that it can carry comments (help text,
// sources, import warnings) and reads back through parse_yaml_layer unchanged.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "lib/config/registry.hpp"

namespace mtrain::config {

// A value as a YAML scalar that reads back as the same text (quoted only when needed).
std::string yaml_scalar(const json& v);

struct YamlOptions {
  std::vector<std::string> header;                          // comment lines at the top
  std::function<std::string(const std::string& key)> note;  // end-of-line comment per key
  bool help_comments = false;                               // a help comment above each key
};

// `values` by dotted key, written nested in registry order (sections in order of first key).
std::string to_yaml(const Registry& reg, const std::map<std::string, json>& values,
                    const YamlOptions& opt = {});

// The effective job for `config show`.
std::string show_yaml(const Registry& reg, const Resolved& r, bool sources);
// {"job": nested, "sources": {key: {"source": …, "origin": …}}} with sources, else the job.
json show_json(const Registry& reg, const Resolved& r, bool sources);

// "job file job.yaml", "environment MTRAIN_LR", "default".
std::string describe_source(Source s, const std::string& origin);

}  // namespace mtrain::config

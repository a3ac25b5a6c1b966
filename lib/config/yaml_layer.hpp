#pragma once
// Reading a job YAML file into a registry Layer, keeping where every value stood so that every
// problem can be reported as file:line:column. Reading never stops at the first problem: it
// collects them all (what `config validate` prints); load_yaml_layer throws them together.
#include <map>
#include <string>
#include <vector>

#include "lib/config/registry.hpp"

namespace mtrain::config {

struct Position {
  std::string file;
  int line = 0, column = 0;  // 1-based; 0: the whole file
  std::string str() const;   // "job.yaml:3:7", or "job.yaml" when line is 0
};

struct Issue {
  bool error = true;  // false: a warning
  Position where;
  std::string key;    // the setting's dotted path, when known
  std::string message;
  std::string hint;
  std::string text() const;  // "job.yaml:3:7: error: <message>. <hint>"
};

struct YamlLayer {
  Layer layer;                               // the values that were valid
  std::map<std::string, Position> positions; // key → where its value stands
  std::vector<Issue> issues;                 // the problems found, in file order (at most kMaxIssues)
  size_t issues_dropped = 0;                 // problems beyond kMaxIssues, counted, not kept
};

// A file with a million bad lines gets the first 50 reported and a count of the rest: nobody
// reads further, and the report stays small however large the file.
constexpr size_t kMaxIssues = 50;
// The line that ends a capped list: "… and N more problems (…)"; "" when none were dropped.
std::string more_issues_line(size_t dropped);

// Parse YAML text (origin names it in positions); never throws on bad content.
YamlLayer parse_yaml_layer(const Registry& reg, const std::string& text, const std::string& origin,
                           Source source);
// Read a file; a missing or unreadable file is an issue at position 0. Relative paths of the files
// a job reads are made relative to the file's folder (from_file_folder).
YamlLayer read_yaml_layer(const Registry& reg, const std::string& path, Source source);

// The settings that name a file the job reads: in a YAML file a relative one is from that file's
// folder, so `mtrain launch --config exp/job.yaml` finds exp/net.pt wherever it is run from (the
// same for launch, validate, show, estimate and the job `config init` writes); on the command line,
// in the environment and in --set, from the current folder. Outputs (train.work_dir, log.*) stay
// from the current folder, where a run's outputs go by default.
const std::vector<std::string>& file_folder_relative_keys();
// Rewrites those values of `layer` (read from `file`) that are relative paths to start with
// `file`'s folder ("exp/job.yaml", "net.pt" → "exp/net.pt"); a file in the current folder changes
// nothing.
void from_file_folder(Layer& layer, const std::string& file);

// Throws an Error listing every issue (one per line) when there is any error.
// `dropped`: problems beyond those listed (YamlLayer::issues_dropped), counted in the paragraph.
void throw_if_errors(const std::vector<Issue>& issues, const std::string& what, size_t dropped = 0);

}  // namespace mtrain::config

#pragma once
// The one YAML document loader: every YAML file mtrain reads (job files, the user file, imported
// accelerate configs) goes through it, so each refusal has one shape and one position style.
//
// In order: UTF-8 (yaml-cpp passes any bytes through, but values become JSON, whose dump throws
// on bad UTF-8), the size before parsing, depth and the node count while parsing (before the tree
// is built, with the line where the limit was passed: yaml_input.cpp), YAML syntax, then depth
// and the node count after alias expansion (yaml-cpp shares an aliased node, so loading is linear, but every reader that walks
// the tree — conversion to JSON, validation — expands each alias again: 9 levels of 9 aliases is
// 387 million nodes). The walk that counts stops at the first node past a limit, so its own cost
// is bounded by the limit (input_limits.hpp).
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "lib/core/input_limits.hpp"

namespace mtrain {

// What is wrong with a document, where: 1-based line and column, 0 when it concerns the whole
// file (a limit). `message` does not name the file; `hint` says what to try.
struct YamlProblem {
  int line = 0;
  int column = 0;
  std::string message;
  std::string hint;
};

// Never throws for bad content: `problem` is set instead (and `root` is then null).
struct YamlDocument {
  YAML::Node root;
  std::optional<YamlProblem> problem;
};
YamlDocument read_yaml_document(const std::string& text, const std::string& origin, const InputLimits& lim = {});

// The same, throwing mtrain::Error "<origin>:<line>:<column>: <message>" (just "<origin>: " when
// the problem has no position) with the hint.
YAML::Node load_yaml_document(const std::string& text, const std::string& origin, const InputLimits& lim = {});

}  // namespace mtrain

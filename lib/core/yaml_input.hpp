#pragma once
// YAML::Load with the limits of input_limits.hpp: size before parsing; depth and the node count
// after alias expansion right after it (yaml-cpp shares an aliased node, so loading is linear,
// but every reader that walks the tree — conversion to JSON, validation — expands each alias
// again: 9 levels of 9 aliases is 387 million nodes). The walk that counts stops at the first
// node past a limit, so its own cost is bounded by the limit. Syntax errors stay
// YAML::ParserException (callers format them with their position); limits throw mtrain::Error.
#include <string>

#include <yaml-cpp/yaml.h>

#include "mtrain/core/input_limits.hpp"

namespace mtrain {

YAML::Node load_yaml_limited(const std::string& text, const std::string& origin, const InputLimits& lim = {});

}  // namespace mtrain

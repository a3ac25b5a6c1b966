#pragma once
// A job resolved from the registry's defaults and `values` given as on the command line
// (`--set key=value`): the one way the launcher's and estimate's unit tests build a resolved job.
#include <map>
#include <string>

#include "lib/config/registry.hpp"

namespace mtrain::testing {

inline config::Resolved resolved_job(const std::map<std::string, std::string>& values) {
  const auto& reg = config::job_registry();
  config::Layer cli{config::Source::Cli, "command line", {}};
  for (const auto& [k, v] : values) cli.values[k] = reg.parse_text(reg.require(k), v);
  return config::resolve(reg, {cli});
}

}  // namespace mtrain::testing

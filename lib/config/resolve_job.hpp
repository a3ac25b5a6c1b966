#pragma once
// The launcher's entry point to configuration: every layer a job can come from, resolved through
// the registry in priority order, with cross-field checks.
//   defaults < user file < job file < MTRAIN_* environment < flags < --set
#include <map>
#include <string>
#include <vector>

#include "lib/config/registry.hpp"

namespace mtrain::config {

struct JobInputs {
  std::string job_file;                          // --config, may be empty
  std::map<std::string, std::string> flags;      // setting key → text given by its CLI flag
  std::vector<std::string> sets;                 // "key=value" from --set, in order
  std::map<std::string, std::string> env;        // the process environment (MTRAIN_* read from it)
  std::string user_file;                         // default: $XDG_CONFIG_HOME/mtrain/config.yaml (or ~/.config/…); skipped if missing
};

// Throws mtrain::Error (exit 2) naming file:line:column, the variable or the flag of any bad
// value, and every cross-field error together. Cross-field warnings land in Resolved::warnings.
Resolved resolve_job(const Registry& reg, const JobInputs& in);

// Every error in the file, thrown together; file:line:col for each.
Layer load_yaml_layer(const Registry& reg, const std::string& path, Source source);

// The layers resolve_job builds, one per variable / flag / --set so provenance names each.
std::vector<Layer> env_layers(const Registry& reg, const std::map<std::string, std::string>& env);
std::vector<Layer> flag_layers(const Registry& reg, const std::map<std::string, std::string>& flags);
std::vector<Layer> set_layers(const Registry& reg, const std::vector<std::string>& sets);

// $XDG_CONFIG_HOME/mtrain/config.yaml, else $HOME/.config/mtrain/config.yaml ("" if neither).
std::string default_user_file(const std::map<std::string, std::string>& env);

}  // namespace mtrain::config

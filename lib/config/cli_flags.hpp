#pragma once
// CLI flags generated from the registry: one --<flag> per setting that has one, with help text,
// type, default and environment variable taken from the registry, grouped by section. Parsed text
// lands in a map keyed by setting key — exactly JobInputs::flags.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "mtrain/config/registry.hpp"

namespace mtrain::config {

// `group` empty: "Settings (<section>)". Bool settings are switches (--raw-output, or
// --raw-output=false); list settings may repeat (values joined by '\n', as parse_text reads them).
void add_setting_flags(CLI::App& app, const Registry& reg, std::map<std::string, std::string>& out,
                       const std::vector<Scope>& scopes = {Scope::Job, Scope::Launch, Scope::Slurm},
                       const std::string& group = {});

// "--nproc-per-node,--nproc": the flag and its aliases, as CLI11 names an option.
std::string flag_names(const Setting& s);

// The help text one flag gets ("Peak learning rate. [a number from 0 to 1000; default 0.001;
// env MTRAIN_LR; key optim.lr]").
std::string flag_help(const Setting& s);

}  // namespace mtrain::config

#pragma once
// CLI flags generated from the registry: one --<flag> per setting that has one, with help text,
// type, default and environment variable taken from the registry, grouped by section. Parsed text
// lands in a map keyed by setting key — exactly JobInputs::flags.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "lib/config/choice_table.hpp"
#include "lib/config/registry.hpp"

namespace mtrain::config {

// Which settings of the scopes get a flag: those of the job, or those that describe one
// invocation (Setting::per_invocation: --node-rank, --dry-run …), which only `mtrain launch`
// takes; `config show` prints a job and takes only the first kind.
enum class FlagKind { Job, PerInvocation };

// `group` empty: "Settings (<section>)". Bool settings are switches (--raw-output, or
// --raw-output=false); list settings may repeat (values joined by '\n', as parse_text reads them).
// A flag `app` already has (another scope's --export) is not added twice.
void add_setting_flags(CLI::App& app, const Registry& reg, std::map<std::string, std::string>& out,
                       const std::vector<Scope>& scopes = {Scope::Job, Scope::Launch, Scope::Slurm},
                       const std::string& group = {}, FlagKind kind = FlagKind::Job);

// An option that takes one of E's names (its ChoiceTable): CLI11 checks the word against the
// table's rows and `target` gets the enum, so a command compares enums, never the word; the help
// shows TEXT:{rows…}. `target` must outlive the parse (a
// field of the command's shared flags).
template <class E, if_choice<E> = 0>
CLI::Option* add_choice_option(CLI::App& app, const std::string& name, E& target, const std::string& help) {
  return app
      .add_option_function<std::string>(
          name, [&target](const std::string& word) { target = *parse_choice<E>(word); }, help)
      ->check(CLI::IsMember(choice_names<E>()));
}

// "--module,-m": the flag and its aliases, as CLI11 names an option.
std::string flag_names(const Setting& s);

// The help text one flag gets ("Peak learning rate. [a number from 0 to 1000; default 0.001;
// env MTRAIN_LR; key optim.lr]").
std::string flag_help(const Setting& s);

}  // namespace mtrain::config

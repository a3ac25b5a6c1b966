#include "lib/config/cli_flags.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "lib/config/render.hpp"

namespace mtrain::config {

std::string flag_help(const Setting& s) {
  return fmt::format("{} [{}; default {}; env {}; {}]", s.help, describe_type(s), yaml_scalar(s.default_value), s.env,
                     s.per_invocation ? "not from a job file or --set" : "key " + s.key);
}

std::string flag_names(const Setting& s) {
  std::string names = dashed(cli_flag(s));
  for (const auto& a : s.aliases) names += "," + dashed(a);
  return names;
}

void add_setting_flags(CLI::App& app, const Registry& reg, std::map<std::string, std::string>& out,
                       const std::vector<Scope>& scopes, const std::string& group, FlagKind kind) {
  for (const auto& s : reg.all()) {
    if (cli_flag(s).empty() || std::find(scopes.begin(), scopes.end(), s.scope) == scopes.end()) continue;
    if (s.per_invocation != (kind == FlagKind::PerInvocation)) continue;
    // Two scopes may spell a flag alike (--export: launch.export for `mtrain launch`,
    // slurm.export for `mtrain slurm script`); a command that takes both (`config show`) gives
    // the spelling to the one it adds first, and --set names either.
    if (app.get_option_no_throw(dashed(cli_flag(s))) != nullptr) continue;
    const std::string key = s.key;
    CLI::Option* opt;
    if (s.type == Type::Bool && !s.allow_auto) {
      // A switch: --raw-output alone means true; --raw-output=false (or any other word) goes to
      // the registry's parse like every other source, so --raw-output=maybe gets its error.
      const std::string help = flag_help(s);
      opt = app.add_flag(flag_names(s), help);
      opt->each([&out, key](const std::string& v) { out[key] = v.empty() ? "true" : v; });
    } else if (s.list) {
      // Repeated flags append, in order: the items travel one per line (registry.hpp).
      opt = app.add_option_function<std::vector<std::string>>(
          flag_names(s),
          [&out, key, sep = s.list_separator](const std::vector<std::string>& v) {
            for (const auto& item : v) out[key] += (out[key].empty() ? "" : std::string(1, sep)) + item;
          },
          flag_help(s));
    } else {
      opt = app.add_option_function<std::string>(
          flag_names(s), [&out, key](const std::string& v) { out[key] = v; }, flag_help(s));
    }
    // A switch takes no value word. A choice lists its values in the CLI11 form "CHOICE:{a,b}":
    // --help shows them and shell completion reads them from there (completion/model.cpp).
    if (s.type == Type::Choice)
      opt->type_name(fmt::format("CHOICE:{{{}}}", fmt::join(s.choices, ",")));
    else if (!(s.type == Type::Bool && !s.allow_auto))
      opt->type_name(s.type == Type::Int ? "INT" : s.type == Type::Float ? "NUM" : s.type == Type::Bool ? "BOOL" : "TEXT");
    opt->group(!group.empty() ? group : fmt::format("Settings ({})", section_of(s.key) == s.key ? "job" : section_of(s.key)));
  }
}

}  // namespace mtrain::config

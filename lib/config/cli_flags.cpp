#include "mtrain/config/cli_flags.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mtrain/config/render.hpp"

namespace mtrain::config {

std::string flag_help(const Setting& s) {
  return fmt::format("{} [{}; default {}; env {}; key {}]", s.help, describe_type(s),
                     yaml_scalar(s.default_value), s.env, s.key);
}

void add_setting_flags(CLI::App& app, const Registry& reg, std::map<std::string, std::string>& out,
                       const std::vector<Scope>& scopes) {
  for (const auto& s : reg.all()) {
    if (cli_flag(s).empty() || std::find(scopes.begin(), scopes.end(), s.scope) == scopes.end()) continue;
    const std::string key = s.key;
    auto* opt = app.add_option_function<std::string>(
        "--" + cli_flag(s), [&out, key](const std::string& v) { out[key] = v; }, flag_help(s));
    opt->type_name(s.type == Type::Choice ? "CHOICE" : s.type == Type::Int ? "INT" : s.type == Type::Float ? "NUM" : s.type == Type::Bool ? "BOOL" : "TEXT");
    opt->group(fmt::format("Settings ({})", section_of(s.key) == s.key ? "job" : section_of(s.key)));
  }
}

}  // namespace mtrain::config

#include "lib/config/resolve_job.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include "lib/config/cross_checks.hpp"
#include "lib/config/yaml_layer.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

namespace {
bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}
}  // namespace

std::vector<Layer> env_layers(const Registry& reg, const std::map<std::string, std::string>& env) {
  std::vector<Layer> out;
  for (const auto& s : reg.all()) {
    auto it = env.find(s.env);
    if (it == env.end()) continue;
    try {
      out.push_back({Source::Env, s.env, {{s.key, reg.parse_text(s, it->second)}}});
    } catch (Error& e) {
      throw e.at("environment variable " + s.env);
    }
  }
  return out;
}

std::vector<Layer> flag_layers(const Registry& reg, const std::map<std::string, std::string>& flags) {
  std::vector<Layer> out;
  for (const auto& [key, text] : flags) {
    const Setting& s = reg.require(key);
    const std::string where = cli_flag(s).empty() ? "--set " + key : "--" + cli_flag(s);
    try {
      out.push_back({Source::Cli, where, {{key, reg.parse_text(s, text)}}});
    } catch (Error& e) {
      throw e.at(where);
    }
  }
  return out;
}

std::vector<Layer> set_layers(const Registry& reg, const std::vector<std::string>& sets) {
  std::vector<Layer> out;
  for (const auto& arg : sets) {
    auto [key, text] = split_assignment(arg);
    try {
      const Setting& s = reg.require(key);
      if (s.per_invocation) {
        auto [message, hint] = per_invocation_refusal(s, "--set");
        throw Error(message, hint);
      }
      out.push_back({Source::Cli, "--set", {{key, reg.parse_text(s, text)}}});
    } catch (Error& e) {
      throw e.at("--set " + arg);
    }
  }
  return out;
}

std::string default_user_file(const std::map<std::string, std::string>& env) {
  auto xdg = env.find("XDG_CONFIG_HOME");
  if (xdg != env.end() && !xdg->second.empty()) return xdg->second + "/mtrain/config.yaml";
  auto home = env.find("HOME");
  if (home != env.end() && !home->second.empty()) return home->second + "/.config/mtrain/config.yaml";
  return "";
}

Resolved resolve_job(const Registry& reg, const JobInputs& in) {
  std::vector<Layer> layers;
  std::vector<std::string> file_warnings;  // e.g. what an on-the-fly DeepSpeed import left out
  auto load = [&](const std::string& path, Source source) {
    YamlLayer y = read_yaml_layer(reg, path, source);
    throw_if_errors(y.issues, path);
    for (const auto& i : y.issues)
      if (!i.error) file_warnings.push_back(i.where.str() + ": " + i.message + (i.hint.empty() ? "" : ". " + i.hint));
    return y.layer;
  };
  const std::string user = in.user_file.empty() ? default_user_file(in.env) : in.user_file;
  if (!user.empty() && file_exists(user)) layers.push_back(load(user, Source::UserFile));
  if (!in.job_file.empty()) layers.push_back(load(in.job_file, Source::JobFile));
  auto env = env_layers(reg, in.env);
  layers.insert(layers.end(), env.begin(), env.end());
  auto flags = flag_layers(reg, in.flags);
  layers.insert(layers.end(), flags.begin(), flags.end());
  auto sets = set_layers(reg, in.sets);
  layers.insert(layers.end(), sets.begin(), sets.end());

  Resolved r = resolve(reg, layers);
  r.warnings = file_warnings;
  std::vector<std::string> errors;
  for (const auto& p : cross_check(reg, r)) {
    std::vector<std::string> from;
    for (const auto& k : p.keys) {
      const auto& [src, origin] = r.provenance.at(k);
      if (src != Source::Default) from.push_back(fmt::format("{} from {}", k, origin));
    }
    std::string line = p.message + (from.empty() ? "" : " [" + str::join(from, "; ") + "]") + ". " + p.hint;
    (p.error ? errors : r.warnings).push_back(line);
  }
  if (errors.size() == 1) throw Error(errors[0]);
  if (!errors.empty())
    throw Error(fmt::format("the job's settings do not fit together:\n  {}", str::join(errors, "\n  ")));
  return r;
}

}  // namespace mtrain::config

#include "lib/config/registry.hpp"

#include <cmath>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::config {

std::string to_string(Source s) {
  switch (s) {
    case Source::Default: return "default";
    case Source::UserFile: return "user config";
    case Source::JobFile: return "job file";
    case Source::Env: return "environment";
    case Source::Cli: return "command line";
  }
  return "?";
}

std::string to_string(Scope s) {
  switch (s) {
    case Scope::Job: return "job";
    case Scope::Launch: return "launch";
    case Scope::Slurm: return "slurm";
  }
  return "?";
}

std::string cli_flag(const Setting& s) { return s.flag.empty() ? s.launcher_flag : s.flag; }

std::string dashed(const std::string& name) { return (name.size() == 1 ? "-" : "--") + name; }

std::pair<std::string, std::string> per_invocation_refusal(const Setting& s, const std::string& where) {
  return {fmt::format("setting '{}' cannot come from {}: it describes this node or this run of `mtrain launch`, "
                      "not the job that every node reads",
                      s.key, where),
          fmt::format("Remove it there and pass {}{} on the command line, or set {} in the environment.",
                      dashed(cli_flag(s)), s.type == Type::Bool ? "" : " VALUE", s.env)};
}

std::string section_of(const std::string& key) { return key.substr(0, key.find('.')); }

static std::string number_text(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return fmt::format("{}", static_cast<long long>(v));
  return fmt::format("{}", v);
}

std::string describe_type(const Setting& s) {
  if (s.list) {
    if (!s.format.empty()) return s.format;
    Setting item = s;
    item.list = false;
    return "a list (each flag or --set adds one), each item " + describe_type(item);
  }
  std::string range;
  if (s.min && s.max)
    range = fmt::format(" from {} to {}", number_text(*s.min), number_text(*s.max));
  else if (s.min)
    range = fmt::format(" of at least {}", number_text(*s.min));
  else if (s.max)
    range = fmt::format(" of at most {}", number_text(*s.max));
  std::string autos = s.allow_auto ? " or 'auto'" : "";
  switch (s.type) {
    case Type::Bool: return s.allow_auto ? "true, false or 'auto'" : "true or false";
    case Type::Int: return "an integer" + range + autos;
    case Type::Float: return "a number" + range + autos;
    case Type::String: return s.format.empty() ? "text" : s.format;
    case Type::Choice: return "one of " + str::join(s.choices, ", ");
  }
  return "?";
}

std::string env_name(const std::string& base) {
  std::string e = "MTRAIN_" + str::to_upper(base);
  for (auto& c : e)
    if (c == '-' || c == '.') c = '_';
  return e;
}

void Registry::add(Setting s) {
  const std::string sec = section_of(s.key);
  if (sec == "launch") s.scope = Scope::Launch;
  if (sec == "slurm") s.scope = Scope::Slurm;
  if (s.scope != Scope::Job && !s.flag.empty()) s.launcher_flag = std::move(s.flag), s.flag.clear();
  if (s.env.empty()) s.env = env_name(cli_flag(s).empty() ? s.key : cli_flag(s));
  by_key_[s.key] = settings_.size();
  if (!cli_flag(s).empty()) by_flag_[cli_flag(s)] = settings_.size();
  for (const auto& a : s.aliases) by_flag_[a] = settings_.size();
  if (s.list && !s.default_value.is_array()) s.default_value = json::array();
  settings_.push_back(std::move(s));
}

const Setting* Registry::find(const std::string& key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : &settings_[it->second];
}

const Setting* Registry::find_flag(const std::string& flag) const {
  auto it = by_flag_.find(flag);
  return it == by_flag_.end() ? nullptr : &settings_[it->second];
}

std::vector<std::string> Registry::keys() const {
  std::vector<std::string> out;
  for (const auto& s : settings_) out.push_back(s.key);
  return out;
}

const Setting& Registry::require(const std::string& key) const {
  if (const Setting* s = find(key)) return *s;
  auto near = str::closest(key, keys());
  throw Error(fmt::format("unknown setting '{}'", key),
              near ? fmt::format("Did you mean '{}'? `mtrain config show` lists every setting.", *near)
                   : "`mtrain config show` lists every setting.");
}

static Error bad_value(const Setting& s, const std::string& shown, const std::string& why = {}) {
  return Error(fmt::format("setting '{}' got {}{}", s.key, shown, why.empty() ? "" : " (" + why + ")"),
               fmt::format("It takes {}.", describe_type(s)));
}

static void check_range(const Setting& s, double v, const std::string& shown) {
  if (s.min && v < *s.min) throw bad_value(s, shown, fmt::format("below the minimum {}", *s.min));
  if (s.max && v > *s.max) throw bad_value(s, shown, fmt::format("above the maximum {}", *s.max));
}

// The items of a list setting's text (registry.hpp: Setting::list_separator).
static std::vector<std::string> list_items(const Setting& s, const std::string& raw) {
  if (s.list_separator == '\n') return str::split(raw, '\n');
  std::string t = str::trim(raw);
  if (t.size() >= 2 && t.front() == '[' && t.back() == ']') t = t.substr(1, t.size() - 2);
  std::vector<std::string> names;
  for (const auto& i : str::split(t, s.list_separator))
    if (!str::trim(i).empty()) names.push_back(str::trim(i));
  return names;
}

json Registry::parse_text(const Setting& s, const std::string& raw) const {
  // Values become JSON, whose dump throws on bytes that are not UTF-8 (a file in Latin-1, a
  // truncated multibyte character): refused here, for every source, before anything keeps them.
  if (const auto bad = str::invalid_utf8_at(raw))
    throw Error(fmt::format("setting '{}': its value is not valid UTF-8 text (byte {} of it)", s.key, *bad + 1),
                "Write the value as UTF-8 text (save the file as UTF-8).");
  if (s.list) {
    Setting item = s;
    item.list = false;
    json out = json::array();
    for (const auto& one : list_items(s, raw)) out.push_back(parse_text(item, one));
    return out;
  }
  const std::string& text = raw;
  const std::string shown = "'" + raw + "'";
  if (s.allow_auto && text == "auto") return text;
  switch (s.type) {
    case Type::Bool: {
      if (text == "true" || text == "1" || text == "yes" || text == "on") return true;
      if (text == "false" || text == "0" || text == "no" || text == "off") return false;
      throw bad_value(s, shown);
    }
    case Type::Int: {
      try {
        size_t used = 0;
        long long v = std::stoll(text, &used);
        if (used != text.size()) throw bad_value(s, shown);
        check_range(s, static_cast<double>(v), shown);
        return v;
      } catch (const std::logic_error&) {
        throw bad_value(s, shown);
      }
    }
    case Type::Float: {
      try {
        size_t used = 0;
        double v = std::stod(text, &used);
        if (used != text.size() || !std::isfinite(v)) throw bad_value(s, shown);
        check_range(s, v, shown);
        return v;
      } catch (const std::logic_error&) {
        throw bad_value(s, shown);
      }
    }
    case Type::String:
      if (s.check_text) {
        std::string why = s.check_text(text);
        if (!why.empty()) throw bad_value(s, shown, why);
      }
      return text;
    case Type::Choice: {
      for (const auto& c : s.choices)
        if (c == text) return text;
      auto near = str::closest(text, s.choices);
      throw bad_value(s, shown, near ? "did you mean '" + *near + "'?" : "");
    }
  }
  return text;
}

json Registry::check_value(const Setting& s, const json& v) const {
  if (s.list) {
    Setting item = s;
    item.list = false;
    // A text where a list is expected reads as the list's text, as from a flag.
    if (v.is_string()) return parse_text(s, v.get<std::string>());
    json out = json::array();
    for (const auto& one : v.is_array() ? v : json::array({v})) {
      if (one.is_array() || one.is_object()) throw bad_value(s, v.dump(), "items must be plain values");
      out.push_back(check_value(item, one));
    }
    return out;
  }
  const std::string shown = v.dump();
  if (s.allow_auto && v.is_string() && v.get<std::string>() == "auto") return v;
  switch (s.type) {
    case Type::Bool:
      if (!v.is_boolean()) throw bad_value(s, shown);
      return v;
    case Type::Int:
      if (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()) {
        check_range(s, v.get<double>(), shown);
        return static_cast<long long>(v.get<double>());
      }
      if (!v.is_number_integer()) throw bad_value(s, shown);
      check_range(s, v.get<double>(), shown);
      return v;
    case Type::Float:
      if (!v.is_number()) throw bad_value(s, shown);
      check_range(s, v.get<double>(), shown);
      return v.get<double>();
    case Type::String:
      if (v.is_string()) return parse_text(s, v.get<std::string>());
      if (v.is_number() || v.is_boolean()) return parse_text(s, v.dump());
      throw bad_value(s, shown);
    case Type::Choice:
      if (!v.is_string()) throw bad_value(s, shown);
      return parse_text(s, v.get<std::string>());
  }
  return v;
}

const json& get(const json& nested, const std::string& key) {
  const json* cur = &nested;
  for (const auto& part : str::split(key, '.')) {
    if (!cur->is_object() || !cur->contains(part))
      throw Error(fmt::format("job spec has no setting '{}'", key), "", kExitFailure);
    cur = &(*cur)[part];
  }
  return *cur;
}

void set(json& nested, const std::string& key, json value) {
  json* cur = &nested;
  auto parts = str::split(key, '.');
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    if (!(*cur)[parts[i]].is_object()) (*cur)[parts[i]] = json::object();
    cur = &(*cur)[parts[i]];
  }
  (*cur)[parts.back()] = std::move(value);
}

json Registry::defaults() const {
  json out = json::object();
  for (const auto& s : settings_) set(out, s.key, s.default_value);
  return out;
}

Resolved resolve(const Registry& reg, const std::vector<Layer>& layers) {
  Resolved r;
  r.job = reg.defaults();
  for (const auto& s : reg.all()) r.provenance[s.key] = {Source::Default, ""};
  for (const auto& layer : layers) {
    for (const auto& [key, value] : layer.values) {
      try {
        const Setting& s = reg.require(key);
        set(r.job, key, reg.check_value(s, value));
      } catch (Error& e) {
        throw e.at(layer.origin);
      }
      r.provenance[key] = {layer.source, layer.origin};
    }
  }
  return r;
}

static void flatten(const Registry& reg, const json& node, const std::string& prefix,
                    const std::string& origin, json& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (it->is_object() && !reg.find(key)) {
      flatten(reg, *it, key, origin, out);
      continue;
    }
    try {
      set(out, key, reg.check_value(reg.require(key), *it));
    } catch (Error& e) {
      throw e.at(origin);
    }
  }
}

json load_job(const Registry& reg, const json& nested, const std::string& origin) {
  if (!nested.is_object()) throw Error(fmt::format("{}: a job spec must be a JSON object", origin));
  json out = reg.defaults();
  flatten(reg, nested, "", origin, out);
  return out;
}

json job_spec(const Registry& reg, const json& resolved) {
  json out = json::object();
  for (const auto& s : reg.all())
    if (s.scope == Scope::Job) set(out, s.key, get(resolved, s.key));
  return out;
}

std::pair<std::string, std::string> split_assignment(const std::string& arg) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(fmt::format("--set '{}' is not key=value", arg),
                "Write it like --set train.max_steps=100.");
  return {str::trim(arg.substr(0, eq)), arg.substr(eq + 1)};
}

}  // namespace mtrain::config

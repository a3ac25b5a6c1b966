#include "lib/config/render.hpp"

#include <cctype>

#include <fmt/format.h>

#include "lib/core/strings.hpp"

namespace mtrain::config {

namespace {

bool plain_safe(const std::string& s) {
  if (s.empty()) return false;
  const unsigned char first = static_cast<unsigned char>(s[0]);
  if (!(std::isalpha(first) || s[0] == '_' || s[0] == '/' || s[0] == '.')) return false;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || std::string_view("_./-+@").find(c) != std::string_view::npos)) return false;
  }
  std::string lower;
  for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* word : {"true", "false", "yes", "no", "on", "off", "null", "y", "n", ".nan", ".inf"})
    if (lower == word) return false;
  return true;
}

}  // namespace

std::string yaml_scalar(const json& v) {
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    return plain_safe(s) ? s : json(s).dump();  // a JSON string is a valid double-quoted YAML scalar
  }
  if (v.is_number_float()) {
    std::string t = v.dump();
    // 1e-08 reads back as a float in YAML 1.2 only with a dot; keep the form our reader accepts.
    return t;
  }
  return v.dump();
}

std::string describe_source(Source s, const std::string& origin) {
  if (s == Source::Default) return "default";
  return origin.empty() ? to_string(s) : to_string(s) + " " + origin;
}

std::string to_yaml(const Registry& reg, const std::map<std::string, json>& values, const YamlOptions& opt) {
  std::string out;
  for (const auto& line : opt.header) out += line.empty() ? "#\n" : "# " + line + "\n";
  if (!opt.header.empty()) out += "\n";
  // Sections in order of their first setting; settings in registry order within a section.
  std::vector<std::string> sections;
  std::map<std::string, std::vector<const Setting*>> by_section;
  for (const auto& s : reg.all()) {
    if (!values.count(s.key)) continue;
    const std::string sec = section_of(s.key);
    if (!by_section.count(sec)) sections.push_back(sec);
    by_section[sec].push_back(&s);
  }
  auto line = [&](const Setting& s, const std::string& indent, const std::string& name) {
    if (opt.help_comments) out += indent + "# " + s.help + " (" + describe_type(s) + ")\n";
    std::string l = indent + name + ": " + yaml_scalar(values.at(s.key));
    if (opt.note) {
      std::string n = opt.note(s.key);
      if (!n.empty()) l += "  # " + n;
    }
    out += l + "\n";
  };
  for (const auto& sec : sections) {
    const auto& list = by_section[sec];
    if (list.size() == 1 && list[0]->key == sec) {
      line(*list[0], "", sec);
    } else {
      out += sec + ":\n";
      for (const Setting* s : list) line(*s, "  ", s->key.substr(sec.size() + 1));
    }
    if (opt.help_comments) out += "\n";
  }
  return out;
}

std::string show_yaml(const Registry& reg, const Resolved& r, bool sources) {
  std::map<std::string, json> values;
  for (const auto& s : reg.all())
    if (!s.per_invocation) values[s.key] = get(r.job, s.key);  // the job: it reads back as a job file
  YamlOptions opt;
  if (sources) {
    opt.note = [&](const std::string& key) {
      const auto& [src, origin] = r.provenance.at(key);
      return describe_source(src, origin);
    };
  }
  std::string out = to_yaml(reg, values, opt);
  for (const auto& w : r.warnings) out += "# warning: " + w + "\n";
  return out;
}

json show_json(const Registry& reg, const Resolved& r, bool sources) {
  json job = r.job;  // without what describes one run (Setting::per_invocation), as show_yaml
  for (const auto& s : reg.all())
    if (s.per_invocation) job[section_of(s.key)].erase(s.key.substr(s.key.find('.') + 1));
  if (!sources) return job;
  json src = json::object();
  for (const auto& s : reg.all()) {
    if (s.per_invocation) continue;
    const auto& [where, origin] = r.provenance.at(s.key);
    src[s.key] = {{"source", to_string(where)}, {"origin", origin}};
  }
  return {{"job", job}, {"sources", src}, {"warnings", r.warnings}};
}

}  // namespace mtrain::config

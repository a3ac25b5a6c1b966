#include "lib/config/validate.hpp"

#include <fmt/format.h>

#include "lib/config/cross_checks.hpp"
#include "lib/config/data_checks.hpp"
#include "lib/core/error.hpp"

namespace mtrain::config {

bool ValidateReport::ok() const {
  for (const auto& i : issues)
    if (i.error) return false;
  return true;
}

namespace {

ValidateReport finish(const Registry& reg, YamlLayer y, const std::string& origin) {
  ValidateReport rep;
  rep.file = origin;
  rep.settings = y.layer.values.size();
  rep.issues = std::move(y.issues);
  rep.issues_dropped = y.issues_dropped;
  // Cross-field checks see the valid values; a key the file gave is pointed at, else the file.
  Resolved r = resolve(reg, {y.layer});
  for (const auto& p : cross_check(reg, r)) {
    Position where{origin, 0, 0};
    std::string key = p.keys.empty() ? "" : p.keys[0];
    for (const auto& k : p.keys) {
      auto it = y.positions.find(k);
      if (it != y.positions.end()) {
        where = it->second;
        key = k;
        break;
      }
    }
    rep.issues.push_back({p.error, where, key, p.message, p.hint});
  }
  return rep;
}

}  // namespace

ValidateReport validate_text(const Registry& reg, const std::string& text, const std::string& origin) {
  return finish(reg, parse_yaml_layer(reg, text, origin, Source::JobFile), origin);
}

namespace {

// The launch's checks of the files, for a valid job read from `y` (validate_file_as_launch).
void add_file_checks(const Registry& reg, const YamlLayer& y, const std::string& file,
                     const std::function<void(const json& job)>& check_model, ValidateReport& rep) {
  if (!rep.ok()) return;
  const Resolved r = resolve(reg, {y.layer});
  if (!ranks_run_here(r.job)) return;
  auto at = [&](const std::string& key) {
    auto it = y.positions.find(key);
    return it == y.positions.end() ? Position{file, 0, 0} : it->second;
  };
  for (const auto& p : data_file_problems(r.job, true)) {
    const std::string key = p.keys.empty() ? "" : p.keys[0];
    rep.issues.push_back({p.error, at(key), key, p.message, p.hint});
  }
  if (!rep.ok() || !check_model) return;
  try {
    check_model(r.job);
  } catch (const Error& e) {
    rep.issues.push_back({true, at("model.path"), "model.path", e.message(), e.hint()});
  }
}

}  // namespace

ValidateReport validate_text_for(const Registry& reg, const std::string& text, const std::string& file,
                                 const std::function<void(const json& job)>& check_model) {
  YamlLayer y = parse_yaml_layer(reg, text, file, Source::JobFile);
  from_file_folder(y.layer, file);
  ValidateReport rep = finish(reg, y, file);
  add_file_checks(reg, y, file, check_model, rep);
  return rep;
}

ValidateReport validate_file(const Registry& reg, const std::string& path) {
  return finish(reg, read_yaml_layer(reg, path, Source::JobFile), path);
}

ValidateReport validate_file_as_launch(const Registry& reg, const std::string& path,
                                       const std::function<void(const json& job)>& check_model) {
  const YamlLayer y = read_yaml_layer(reg, path, Source::JobFile);
  ValidateReport rep = finish(reg, y, path);
  add_file_checks(reg, y, path, check_model, rep);
  return rep;
}

std::string format_report(const ValidateReport& r) {
  std::string out;
  size_t errors = 0, warnings = 0;
  for (const auto& i : r.issues) {
    out += i.text() + "\n";
    (i.error ? errors : warnings) += 1;
  }
  if (r.issues_dropped) out += more_issues_line(r.issues_dropped) + "\n";
  if (errors == 0)
    out += fmt::format("{}: valid ({} settings set{})\n", r.file, r.settings,
                       warnings ? fmt::format(", {} warning{}", warnings, warnings == 1 ? "" : "s") : "");
  else
    out += fmt::format("{}: invalid, {}{} error{}{}\n", r.file, r.issues_dropped ? "at least " : "", errors, errors == 1 ? "" : "s",
                       warnings ? fmt::format(", {} warning{}", warnings, warnings == 1 ? "" : "s") : "");
  return out;
}

}  // namespace mtrain::config

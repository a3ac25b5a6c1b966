#pragma once
// `mtrain config validate FILE`: every problem in a job file, each at file:line:column, with the
// key path, the bad value, what is allowed and "did you mean" — then the cross-field checks,
// pointed at the line of the first setting involved.
#include <string>
#include <vector>

#include "mtrain/config/registry.hpp"
#include "mtrain/config/yaml_layer.hpp"

namespace mtrain::config {

struct ValidateReport {
  std::string file;
  std::vector<Issue> issues;  // errors and warnings, file order first, then cross-field
  size_t settings = 0;        // values the file sets that were valid
  size_t issues_dropped = 0;  // problems beyond the first kMaxIssues (counted, not listed)
  bool ok() const;            // no errors (warnings allowed)
};

ValidateReport validate_text(const Registry& reg, const std::string& text, const std::string& origin);
ValidateReport validate_file(const Registry& reg, const std::string& path);

// Human report: one line per issue, then a summary line.
std::string format_report(const ValidateReport& r);

}  // namespace mtrain::config

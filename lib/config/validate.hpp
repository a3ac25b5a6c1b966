#pragma once
// `mtrain config validate FILE`: every problem in a job file, each at file:line:column, with the
// key path, the bad value, what is allowed and "did you mean" — then the cross-field checks,
// pointed at the line of the first setting involved.
#include <functional>
#include <string>
#include <vector>

#include "lib/config/registry.hpp"
#include "lib/config/yaml_layer.hpp"

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
// validate_file, then, when the job is valid and its ranks run on this machine (ranks_run_here),
// what the launcher checks on disk before any rank starts: the data files (data_checks.hpp, on
// disk) and, through `check_model`, the model file (the launcher's check_trainer_files,
// launch/model_check.hpp, which config may not link; it throws mtrain::Error). `mtrain config
// validate` is this, so a job it calls valid is one the launch does not refuse for its files.
ValidateReport validate_file_as_launch(const Registry& reg, const std::string& path,
                                       const std::function<void(const json& job)>& check_model);

// `text` about to be written to `file`, checked as validate_file_as_launch will check it once
// written (relative input paths from the file's folder: yaml_layer.hpp, from_file_folder): what
// `config init` reads back, so it never writes a job that `config validate` refuses.
ValidateReport validate_text_for(const Registry& reg, const std::string& text, const std::string& file,
                                 const std::function<void(const json& job)>& check_model = {});

// Human report: one line per issue, then a summary line.
std::string format_report(const ValidateReport& r);

}  // namespace mtrain::config

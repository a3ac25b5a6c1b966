#pragma once
// The `mtrain config …` subcommands as library calls: options in, exit code out, text to the
// given streams (so tests run them without a process). apps/mtrain/cmd_config.cpp only maps
// flags onto these structs.
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "lib/config/choice_table.hpp"
#include "lib/config/import.hpp"
#include "lib/config/output_format.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/wizard.hpp"

namespace mtrain::config {

// config show --format: the resolved job as YAML (a job file) or JSON.
enum class ShowFormat { Yaml, Json };
template <>
struct ChoiceTable<ShowFormat> {
  static constexpr const char* what = "format";
  static constexpr ChoiceRow<ShowFormat> rows[] = {{ShowFormat::Yaml, "yaml"}, {ShowFormat::Json, "json"}};
};

struct ShowOptions {
  std::string job_file;
  bool sources = false;
  ShowFormat format = ShowFormat::Yaml;
  std::map<std::string, std::string> flags;      // from the generated setting flags
  std::vector<std::string> sets;
  std::map<std::string, std::string> env;
  std::string user_file;
};
int config_show(const Registry& reg, const ShowOptions& opt, std::ostream& out, std::ostream& err);

struct ValidateOptions {
  std::string file;
  OutputFormat format = OutputFormat::Text;
  // The launcher's model check (validate.hpp, validate_file_as_launch); unset: the file's own checks.
  std::function<void(const json& job)> check_model;
};
int config_validate(const Registry& reg, const ValidateOptions& opt, std::ostream& out, std::ostream& err);

struct ImportOptions {
  std::string file;
  std::string output;  // empty: stdout
  bool force = false;
};
int config_import(const Registry& reg, const ImportOptions& opt, std::ostream& out, std::ostream& err);

struct ExportOptions {
  std::string file;                           // job file (or a DeepSpeed/accelerate config)
  ImportFormat to = ImportFormat::DeepSpeed;
  std::string output;                         // empty: stdout
  bool force = false;
  std::map<std::string, std::string> env;     // MTRAIN_* take part, as for launch
};
// Writes the resolved job as a ds_config.json or an accelerate config.yaml; the settings the
// target has no place for are named on `err`.
int config_export(const Registry& reg, const ExportOptions& opt, std::ostream& out, std::ostream& err);

int config_init(const Registry& reg, const InitOptions& opt, std::istream& in, std::ostream& out);

struct DocsOptions {
  std::string output;  // empty: stdout
};
int config_docs(const Registry& reg, const DocsOptions& opt, std::ostream& out);

// Writes text to path via a temporary file (mkstemp beside it, fsync, rename); refuses an existing
// file unless force; a device or FIFO is written in place. Every write is checked: a failure
// throws mtrain::Error (exit 1) naming the path, and leaves the old file as it was.
void write_file(const std::string& path, const std::string& text, bool force);

// `text` to `out` (standard output), flushed and checked: a failed write (a full disk, a closed
// descriptor) throws mtrain::Error (exit 1) saying "standard output".
void write_stdout(std::ostream& out, const std::string& text);

}  // namespace mtrain::config

#pragma once
// text | json: what the commands that print a result print (--format of env, estimate, bench,
// runs, checkpoint inspect, config validate, slurm submit/status, and launch.format of --dry-run),
// with ONE name table (choice_table.hpp) and parsed once where the flag is read
// (cli_flags.hpp's add_choice_option).
#include "lib/config/choice_table.hpp"

namespace mtrain::config {

enum class OutputFormat { Text, Json };
template <>
struct ChoiceTable<OutputFormat> {
  static constexpr const char* what = "format";
  static constexpr ChoiceRow<OutputFormat> rows[] = {{OutputFormat::Text, "text"}, {OutputFormat::Json, "json"}};
};

}  // namespace mtrain::config

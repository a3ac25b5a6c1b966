#pragma once
// The sbatch script of a job: a template from templates/slurm/ (embedded in the binary at build
// time, or a user's file) with its {{PLACEHOLDERS}} filled. Every user string is quoted: values on
// #SBATCH lines for sbatch's own option parser, values in the script body for bash.
#include <map>
#include <string>

#include "lib/slurm/job_options.hpp"

namespace mtrain::slurm {

struct ScriptContext {
  std::string version;      // mtrain version, for the header comment
  std::string command;      // the mtrain subcommand that wrote it, for the header comment
};

// The text of the bundled template for a pattern (embedded at build time).
const std::string& bundled_template(Pattern p);
// Fill `{{NAME}}` placeholders; an unknown or unclosed placeholder is an error naming
// origin:line. Values are inserted verbatim (callers quote).
std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values,
                          const std::string& origin);

// Render the whole script for a finalized job.
std::string render_script(const JobOptions& job, const ScriptContext& ctx);

// Quote a value for an `#SBATCH --opt=VALUE` line as sbatch itself parses it (double quotes,
// backslash escapes; an unquoted '#' would start a comment). Line breaks are refused.
std::string sbatch_quote(const std::string& value);

// The launch arguments that the agent pattern passes to `mtrain launch` (config, ranks per node,
// then the user's own).
std::vector<std::string> agent_launch_args(const JobOptions& job);

}  // namespace mtrain::slurm

#pragma once
// What a Slurm job asks for: the sbatch options, the setup lines, and what runs inside. Every
// option is a slurm.* setting of the registry (lib/config/launch_settings.cpp: type, default, help,
// flag, variable, checks), so `mtrain slurm`, the job file's `slurm:` section and `mtrain launch
// --config` (which reads the same file inside the allocation) know the same keys; job_options.cpp
// binds each key to its field here.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/config/launch_choices.hpp"

namespace mtrain::slurm {

// How ranks start inside the allocation: slurm.pattern, with its name table in
// lib/config/launch_choices.hpp (config::to_string prints it).
using Pattern = config::SlurmPattern;

struct JobOptions {
  std::string job_name = "mtrain";
  std::string partition, account, qos, constraint;
  int nodes = 1;
  int ntasks_per_node = 0;   // ranks per node; 0: gpus_per_node, else 1
  int gpus_per_node = 0;     // → --gres=gpu:N
  std::string gres;          // verbatim --gres (instead of gpus_per_node)
  int cpus_per_task = 0;     // per rank; 0: Slurm's default
  std::string mem;           // --mem, e.g. 64G
  std::string time;          // --time, e.g. 1-00:00:00
  bool exclusive = false;
  std::string output;        // --output; default <cwd>/mtrain-slurm/%x-%j.out
  std::string error;         // --error; default: with the output
  std::vector<std::string> exports;  // ALL, NONE, NAME, NAME=value
  std::vector<std::string> sbatch_lines;  // extra "#SBATCH …" lines, verbatim
  std::vector<std::string> setup;   // shell lines run before the launch (module load, activate)
  std::string signal = "USR1@90";   // SIG@SECONDS before the time limit, forwarded to ranks; "none"
  bool requeue = false;             // requeue on that signal; restarts add --resume auto
  Pattern pattern = Pattern::AgentPerNode;
  std::string template_file;        // a custom template instead of the bundled one
  std::string mtrain;               // mtrain as the compute nodes see it; default: this binary
  std::string chdir;                // working directory of the job; default: where it is submitted
  std::string config;               // the job file (passed on to mtrain launch --config)
  std::vector<std::string> launch_args;  // other options for mtrain launch, verbatim
  std::vector<std::string> program;      // -- PROGRAM ARGS; empty: the bundled trainer
  // launch.nnodes / rdzv_backend / rdzv_endpoint as the job file, MTRAIN_* and the user file set
  // them (writer_job): the nodes' `mtrain launch` reads the same, so the script must agree
  // (elastic or not). The launch arguments override them (launch_value).
  std::map<std::string, std::string> launch_settings;
};

// The slurm.* settings of the registry as `mtrain slurm` shows them ("ntasks-per-node"; the YAML
// `slurm:` section also takes "ntasks_per_node"), with a line of help each.
struct SettingInfo {
  std::string key;   // canonical, with '-'
  std::string help;
  bool list = false;  // repeatable: each value appends
  bool flag = false;  // boolean
};
const std::vector<SettingInfo>& job_settings();

// The options of a resolved job (config::resolve_job: defaults < user file < job file <
// MTRAIN_SLURM_* < flags < --set): every slurm.* setting onto its field.
JobOptions job_options_from(const nlohmann::json& resolved);

// slurm.* settings of the registry without a JobOptions field, and bound keys the registry does
// not have (a test keeps this empty).
std::vector<std::string> unbound_settings();

// The value the agent's launch arguments give a launch.* setting (`--flag V` or `--flag=V`, in any
// spelling `mtrain launch` takes for it: config::flag_spellings); the first one, none when absent.
std::optional<std::string> launch_arg_value(const std::vector<std::string>& args, const std::string& key);

// The rank count of `mtrain launch --nproc-per-node N` (any spelling) among the agent's launch
// arguments; none when absent or not a number (auto, cpu, gpu are counted on the node).
std::optional<int> nproc_in_launch_args(const std::vector<std::string>& args);

// True when the agent's launch arguments make an elastic job: `--nnodes MIN:MAX` with MIN < MAX.
// Such a job runs the node rendezvous inside the allocation and outlives a lost node
// (templates/slurm/agent-per-node.sbatch: sbatch --no-kill, no --kill-on-bad-exit).
bool elastic_in_launch_args(const std::vector<std::string>& args);

// A launch.* setting the nodes' `mtrain launch` will use: the launch arguments' value, else
// launch_settings' non-empty one.
std::optional<std::string> launch_value(const JobOptions& job, const std::string& key);

// True when the job is elastic (launch.nnodes MIN:MAX with MIN < MAX, from either source).
bool elastic_job(const JobOptions& job);

// Cross-field checks and defaults (ntasks_per_node, output). Throws mtrain::Error.
void finalize(JobOptions& job, const std::string& cwd);

}  // namespace mtrain::slurm

#include "lib/slurm/script.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "generated/slurm/embedded_templates.hpp"

namespace mtrain::slurm {

namespace {

bool plain(const std::string& v) {
  if (v.empty()) return false;
  for (char c : v)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || std::string_view("@%+=:,./_-").find(c) != std::string_view::npos))
      return false;
  return true;
}

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read the template '{}'", path), "Check the path given to --template.");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string sbatch_quote(const std::string& value) {
  if (value.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
    throw Error(fmt::format("'{}' contains a line break, which an #SBATCH line cannot hold", value));
  if (plain(value)) return value;
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

const std::string& bundled_template(Pattern p) {
  static const std::string agent = embedded::kAgentPerNode;
  static const std::string task = embedded::kTaskPerGpu;
  return p == Pattern::AgentPerNode ? agent : task;
}

std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values,
                          const std::string& origin) {
  std::string out;
  size_t i = 0;
  while (true) {
    size_t open = text.find("{{", i);
    if (open == std::string::npos) break;
    out.append(text, i, open - i);
    size_t line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(open), '\n');
    size_t close = text.find("}}", open + 2);
    size_t nl = text.find('\n', open);
    if (close == std::string::npos || close > nl)
      throw Error(fmt::format("{}:{}: '{{{{' is never closed on its line", origin, line),
                  "Placeholders look like {{NAME}}.");
    std::string name = text.substr(open + 2, close - open - 2);
    auto it = values.find(name);
    if (it == values.end()) {
      std::vector<std::string> names;
      names.reserve(values.size());
      for (const auto& kv : values) names.push_back(kv.first);
      throw Error(fmt::format("{}:{}: unknown placeholder {{{{{}}}}}", origin, line, name),
                  "Known placeholders: " + str::join(names, ", "));
    }
    out += it->second;
    i = close + 2;
  }
  out.append(text, i, std::string::npos);
  return out;
}

std::vector<std::string> agent_launch_args(const JobOptions& job) {
  std::vector<std::string> args;
  if (!job.config.empty()) args.insert(args.end(), {"--config", job.config});
  if (!launch_arg_value(job.launch_args, "launch.nproc_per_node"))
    args.push_back(fmt::format("--nproc-per-node={}", job.ntasks_per_node));
  args.insert(args.end(), job.launch_args.begin(), job.launch_args.end());
  return args;
}

namespace {

// The job's --export entries: bare names go on the #SBATCH --export line, NAME=value entries
// become `export` lines in the script (sbatch's own NAME=value would split at commas).
struct Exports {
  std::vector<std::string> names, lines;
  bool none = false;  // NONE is among the names
};

Exports read_exports(const std::vector<std::string>& exports) {
  Exports x;
  for (const auto& e : exports) {
    auto eq = e.find('=');
    std::string name = e.substr(0, eq);
    if (!is_identifier(name))
      throw Error(fmt::format("export: '{}' is not a variable name", name), "Use ALL, NONE, NAME or NAME=value.");
    if (eq == std::string::npos) {
      x.names.push_back(name);
      x.none = x.none || name == "NONE";
    } else {
      x.lines.push_back(fmt::format("export {}={}", name, str::shell_quote(e.substr(eq + 1))));
    }
  }
  return x;
}

// The #SBATCH block, in sections with a comment line each; an empty value writes no line.
class SbatchBlock {
 public:
  void option(const std::string& name, const std::string& value) {
    if (!value.empty()) lines_.push_back(fmt::format("#SBATCH --{}={}", name, sbatch_quote(value)));
  }
  void line(std::string text) { lines_.push_back(std::move(text)); }
  std::string text() const { return str::join(lines_, "\n"); }

 private:
  std::vector<std::string> lines_;
};

// Nodes, tasks, cores, GPUs, memory and time. An agent per node is one task that starts the
// node's ranks, so it asks for their cores together.
void add_resources(SbatchBlock& sb, const JobOptions& job, bool agent, bool elastic) {
  sb.line("# ---- resources ----");
  sb.option("job-name", job.job_name);
  sb.option("partition", job.partition);
  sb.option("account", job.account);
  sb.option("qos", job.qos);
  sb.option("nodes", std::to_string(job.nodes));
  if (agent) {
    sb.line(fmt::format("# one agent task per node; it starts the node's {} rank(s) itself", job.ntasks_per_node));
    sb.option("ntasks-per-node", "1");
    if (job.cpus_per_task > 0) sb.option("cpus-per-task", std::to_string(job.cpus_per_task * job.ntasks_per_node));
  } else {
    sb.line("# one task per rank");
    sb.option("ntasks-per-node", std::to_string(job.ntasks_per_node));
    if (job.cpus_per_task > 0) sb.option("cpus-per-task", std::to_string(job.cpus_per_task));
  }
  if (job.gpus_per_node > 0) sb.option("gres", fmt::format("gpu:{}", job.gpus_per_node));
  sb.option("gres", job.gres);
  sb.option("mem", job.mem);
  sb.option("time", job.time);
  sb.option("constraint", job.constraint);
  if (job.exclusive) sb.line("#SBATCH --exclusive");
  if (elastic) {
    sb.line("# elastic (--nnodes MIN:MAX): a failed node does not end the job; the others re-form without it");
    sb.line("#SBATCH --no-kill");
  }
}

// Files, the preemption signal and requeueing, the environment and the user's own lines.
// Returns the exports, whose NAME=value entries the script body sets.
Exports add_run_options(SbatchBlock& sb, const JobOptions& job) {
  sb.line("# ---- files ----");
  sb.option("chdir", job.chdir);
  sb.option("output", job.output);
  sb.option("error", job.error);
  if (!job.signal.empty()) {
    sb.line("# ---- preemption: signal the batch shell before the time limit (forwarded below) ----");
    sb.option("signal", "B:" + job.signal);
  }
  if (job.requeue) {
    sb.line("#SBATCH --requeue");
    sb.line("# keep the output of every run of a requeued job");
    sb.option("open-mode", "append");
  }
  Exports exports = read_exports(job.exports);
  if (!exports.names.empty()) {
    if (exports.none) sb.line("# NOTE: --export=NONE gives srun inside the job a bare environment");
    sb.option("export", str::join(exports.names, ","));
  }
  if (!job.sbatch_lines.empty()) {
    sb.line("# ---- extra lines from the job file / --sbatch ----");
    for (const auto& l : job.sbatch_lines) {
      if (l.find_first_of("\r\n") != std::string::npos)
        throw Error(fmt::format("sbatch line '{}' contains a line break", l));
      sb.line("#SBATCH " + str::trim(l));
    }
  }
  return exports;
}

}  // namespace

std::string render_script(const JobOptions& job, const ScriptContext& ctx) {
  const bool agent = job.pattern == Pattern::AgentPerNode;
  const bool elastic = agent && elastic_job(job);
  SbatchBlock sb;
  add_resources(sb, job, agent, elastic);
  const Exports exports = add_run_options(sb, job);

  std::vector<std::string> srun;
  if (job.cpus_per_task > 0)
    srun.push_back(fmt::format("--cpus-per-task={}", agent ? job.cpus_per_task * job.ntasks_per_node : job.cpus_per_task));

  // The template's placeholders (templates/slurm/*.sbatch).
  std::map<std::string, std::string> v;
  v["GENERATED"] = fmt::format("Written by mtrain {} ({}); pattern: {}.", ctx.version, ctx.command,
                               agent ? "one agent per node" : "one task per GPU");
  v["SBATCH"] = sb.text();
  v["EXPORTS"] = exports.lines.empty() ? "# (none)" : str::join(exports.lines, "\n");
  v["SETUP"] = job.setup.empty() ? "# (none)" : str::join(job.setup, "\n");
  v["MTRAIN"] = str::shell_quote(job.mtrain);
  v["LAUNCH_ARGS"] = str::shell_join(agent ? agent_launch_args(job) : job.launch_args);
  v["PROGRAM"] = str::shell_join(job.program);
  v["TASKS_PER_NODE"] = std::to_string(job.ntasks_per_node);
  v["SIGNAL"] = str::shell_quote(job.signal.substr(0, job.signal.find('@')));
  v["REQUEUE"] = job.requeue ? "1" : "0";
  v["SRUN_ARGS"] = str::shell_join(srun);
  v["ELASTIC"] = elastic ? "1" : "0";
  v["KILL_POLICY"] = elastic ? "--kill-on-bad-exit=0 --no-kill" : "--kill-on-bad-exit=1";
  if (!job.template_file.empty()) return fill_template(read_file(job.template_file), v, job.template_file);
  return fill_template(bundled_template(job.pattern), v,
                       agent ? "templates/slurm/agent-per-node.sbatch" : "templates/slurm/task-per-gpu.sbatch");
}

}  // namespace mtrain::slurm

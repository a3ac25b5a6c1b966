#include "mtrain/slurm/job_options.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <regex>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/yaml_input.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain::slurm {

namespace fs = std::filesystem;

namespace {

std::string canonical_key(std::string key) {
  std::replace(key.begin(), key.end(), '_', '-');
  return key;
}

void no_newlines(const std::string& key, const std::string& v) {
  if (v.find_first_of(std::string("\n\r\0", 3)) != std::string::npos)
    throw Error(fmt::format("{}: the value contains a line break", key),
                "Slurm options are single lines; remove the line break.");
}

int to_int(const std::string& key, const std::string& v, int min) {
  auto n = str::parse_uint(str::trim(v));
  if (!n || *n < min || *n > 1'000'000)
    throw Error(fmt::format("{}: '{}' is not a whole number ≥ {}", key, v, min),
                fmt::format("Give --{} a number, e.g. --{} {}", key, key, std::max(min, 1)));
  return static_cast<int>(*n);
}

bool to_bool(const std::string& key, const std::string& v) {
  std::string t = str::trim(v);
  std::transform(t.begin(), t.end(), t.begin(), ::tolower);
  if (t == "true" || t == "yes" || t == "1" || t == "on" || t.empty()) return true;
  if (t == "false" || t == "no" || t == "0" || t == "off") return false;
  throw Error(fmt::format("{}: '{}' is not true or false", key, v));
}

void check_time(const std::string& v) {
  static const std::regex re(
      R"(^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}|\d+-\d{1,2}:\d{1,2}|\d+-\d{1,2}:\d{1,2}:\d{1,2}|UNLIMITED|INFINITE|unlimited|infinite)$)");
  if (!std::regex_match(v, re))
    throw Error(fmt::format("time: '{}' is not a Slurm time limit", v),
                "Use MINUTES, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, e.g. --time 1-12:00:00");
}

void check_mem(const std::string& v) {
  static const std::regex re(R"(^\d+[KMGTkmgt]?[Bb]?$)");
  if (!std::regex_match(v, re))
    throw Error(fmt::format("mem: '{}' is not a memory size", v), "Use a number with K, M, G or T, e.g. --mem 64G");
}

// "USR1@90", "B:SIGUSR1@120", "SIGTERM", "none" → normalized "USR1@90" (B: is always added later).
std::string normalize_signal(const std::string& v) {
  std::string t = str::trim(v);
  if (t == "none" || t == "off" || t.empty()) return "";
  static const std::regex re(R"(^(?:R?B?:)?(?:SIG)?([A-Z]+[0-9]*|[0-9]+)(?:@([0-9]+))?$)");
  std::smatch m;
  if (!std::regex_match(t, m, re))
    throw Error(fmt::format("signal: '{}' is not SIGNAL[@SECONDS]", v),
                "e.g. --signal USR1@90 (sent 90 s before the time limit), or --signal none");
  std::string secs = m[2].matched ? m[2].str() : "60";
  if (str::parse_uint(secs).value_or(70000) > 65535)
    throw Error(fmt::format("signal: {} seconds is more than Slurm accepts (65535)", secs));
  return m[1].str() + "@" + secs;
}

long long time_seconds(const std::string& t) {
  if (t.empty() || !std::isdigit(static_cast<unsigned char>(t[0]))) return -1;
  long long days = 0;
  std::string rest = t;
  auto dash = t.find('-');
  if (dash != std::string::npos) {
    days = std::stoll(t.substr(0, dash));
    rest = t.substr(dash + 1);
  }
  auto parts = str::split(rest, ':');
  std::vector<long long> p;
  for (auto& s : parts) p.push_back(std::stoll(s));
  if (dash != std::string::npos) {  // D-HH[:MM[:SS]]
    while (p.size() < 3) p.push_back(0);
    return days * 86400 + p[0] * 3600 + p[1] * 60 + p[2];
  }
  if (p.size() == 1) return p[0] * 60;             // MINUTES
  if (p.size() == 2) return p[0] * 60 + p[1];      // MM:SS
  return p[0] * 3600 + p[1] * 60 + p[2];           // HH:MM:SS
}

struct Entry {
  SettingInfo info;
  std::function<void(JobOptions&, const std::string&, const std::string&)> set;
};

const std::vector<Entry>& table() {
  using J = JobOptions;
  auto text = [](std::string J::*field) {
    return [field](J& j, const std::string& k, const std::string& v) { no_newlines(k, v); j.*field = v; };
  };
  auto number = [](int J::*field, int min) {
    return [field, min](J& j, const std::string& k, const std::string& v) { j.*field = to_int(k, v, min); };
  };
  auto list = [](std::vector<std::string> J::*field) {
    return [field](J& j, const std::string& k, const std::string& v) { no_newlines(k, v); (j.*field).push_back(v); };
  };
  static const std::vector<Entry> t = {
      {{"job-name", "Job name shown by squeue (--job-name)."}, text(&J::job_name)},
      {{"partition", "Partition to run in (--partition)."}, text(&J::partition)},
      {{"nodes", "Number of nodes (--nodes)."}, number(&J::nodes, 1)},
      {{"ntasks-per-node", "Ranks per node (default: GPUs per node, else 1)."}, number(&J::ntasks_per_node, 1)},
      {{"gpus-per-node", "GPUs per node, as --gres=gpu:N."}, number(&J::gpus_per_node, 0)},
      {{"gres", "Generic resources verbatim, e.g. gpu:a100:8 (instead of --gpus-per-node)."}, text(&J::gres)},
      {{"cpus-per-task", "CPUs per rank (--cpus-per-task)."}, number(&J::cpus_per_task, 1)},
      {{"mem", "Memory per node, e.g. 64G (--mem)."},
       [](J& j, const std::string&, const std::string& v) { check_mem(v); j.mem = v; }},
      {{"time", "Time limit, e.g. 1-12:00:00 (--time)."},
       [](J& j, const std::string&, const std::string& v) { check_time(v); j.time = v; }},
      {{"account", "Account to charge (--account)."}, text(&J::account)},
      {{"qos", "Quality of service (--qos)."}, text(&J::qos)},
      {{"constraint", "Node features required (--constraint)."}, text(&J::constraint)},
      {{"exclusive", "Do not share nodes with other jobs (--exclusive).", false, true},
       [](J& j, const std::string& k, const std::string& v) { j.exclusive = to_bool(k, v); }},
      {{"output", "Job output file (--output; %j job id, %x name)."}, text(&J::output)},
      {{"error", "Job error file (--error); default: with the output."}, text(&J::error)},
      {{"export", "Environment for the job: ALL, NONE, NAME or NAME=value (repeatable).", true},
       [](J& j, const std::string& k, const std::string& v) {
         no_newlines(k, v);
         for (auto& part : v.find('=') == std::string::npos ? str::split(v, ',') : std::vector<std::string>{v})
           if (!str::trim(part).empty()) j.exports.push_back(str::trim(part));
       }},
      {{"sbatch", "An extra #SBATCH line, verbatim, e.g. --mail-type=END (repeatable).", true}, list(&J::sbatch_lines)},
      {{"setup", "A shell line run before the launch, e.g. 'module load cuda' (repeatable).", true}, list(&J::setup)},
      {{"signal", "Signal sent before the time limit and forwarded to the ranks: SIG@SECONDS or none."},
       [](J& j, const std::string&, const std::string& v) { j.signal = normalize_signal(v); }},
      {{"requeue", "Requeue on that signal; the restarted job resumes (--resume auto).", false, true},
       [](J& j, const std::string& k, const std::string& v) { j.requeue = to_bool(k, v); }},
      {{"pattern", "agent: one mtrain agent per node (default); task: srun starts one task per GPU."},
       [](J& j, const std::string&, const std::string& v) {
         std::string t = str::trim(v);
         if (t == "agent" || t == "agent-per-node") j.pattern = Pattern::AgentPerNode;
         else if (t == "task" || t == "task-per-gpu") j.pattern = Pattern::TaskPerGpu;
         else throw Error(fmt::format("pattern: '{}' is not a launch pattern", v), "Use agent or task.");
       }},
      {{"template", "A custom sbatch template (same placeholders as templates/slurm/)."}, text(&J::template_file)},
      {{"mtrain", "Path of mtrain on the compute nodes (default: this binary)."}, text(&J::mtrain)},
      {{"chdir", "Working directory of the job (default: where it is submitted)."}, text(&J::chdir)},
  };
  return t;
}

}  // namespace

const std::vector<SettingInfo>& job_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> v;
    for (const auto& e : table()) v.push_back(e.info);
    return v;
  }();
  return infos;
}

const char* to_string(Pattern p) { return p == Pattern::AgentPerNode ? "agent" : "task"; }

void apply_setting(JobOptions& job, const std::string& key_in, const std::string& value) {
  std::string key = canonical_key(key_in);
  for (const auto& e : table())
    if (e.info.key == key) {
      e.set(job, key, value);
      return;
    }
  std::vector<std::string> keys;
  for (const auto& e : table()) keys.push_back(e.info.key);
  auto near = str::closest(key, keys);
  throw Error(fmt::format("unknown Slurm setting '{}'", key_in),
              near ? fmt::format("Did you mean '{}'?", *near)
                   : "Known settings: " + str::join(keys, ", "));
}

void apply_job_file(JobOptions& job, const std::string& path) {
  const auto text = read_input_file(path);  // size limit
  if (!text) throw Error(fmt::format("cannot read the job file '{}'", path), "Check the path given to --config.");
  apply_job_text(job, *text, path);
  job.config = fs::absolute(path).lexically_normal().string();
}

void apply_job_text(JobOptions& job, const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = load_yaml_limited(text, path);  // size, depth and alias-expansion limits
  } catch (const YAML::Exception& e) {
    throw Error(fmt::format("{}:{}:{}: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg),
                "Fix the YAML syntax of the job file.");
  }
  if (!root.IsMap()) return;
  YAML::Node s = root["slurm"];
  if (!s || s.IsNull()) return;
  auto where = [&](const YAML::Node& n) {
    return fmt::format("{}:{}:{}", path, n.Mark().line + 1, n.Mark().column + 1);
  };
  if (!s.IsMap())
    throw Error(fmt::format("{}: 'slurm' must be a mapping of settings", where(s)),
                "e.g.\nslurm:\n  partition: gpu\n  nodes: 2");
  for (const auto& kv : s) {
    std::string key = kv.first.as<std::string>();
    const YAML::Node& v = kv.second;
    try {
      if (v.IsSequence()) {
        const SettingInfo* info = nullptr;
        for (const auto& i : job_settings())
          if (i.key == canonical_key(key)) info = &i;
        if (info && !info->list)
          throw Error(fmt::format("'{}' takes one value, not a list", key));
        for (const auto& item : v) {
          if (!item.IsScalar()) throw Error(fmt::format("'{}' items must be plain values", key));
          apply_setting(job, key, item.Scalar());
        }
      } else if (v.IsScalar()) {
        apply_setting(job, key, v.Scalar());
      } else if (v.IsNull()) {
        continue;
      } else {
        throw Error(fmt::format("'{}' must be a value or a list of values", key));
      }
    } catch (Error& e) {
      throw e.at(where(v.IsNull() ? kv.first : v));
    }
  }
}

std::optional<int> nproc_in_launch_args(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    for (const char* name : {"--nproc-per-node", "--nproc_per_node", "--nproc"}) {
      const std::string n = name;
      std::string value;
      if (args[i] == n && i + 1 < args.size()) value = args[i + 1];
      else if (str::starts_with(args[i], n + "=")) value = args[i].substr(n.size() + 1);
      else continue;
      auto v = str::parse_uint(value);
      if (v && *v >= 1 && *v <= 4096) return static_cast<int>(*v);
      return std::nullopt;  // auto/cpu/gpu: counted on the node
    }
  }
  return std::nullopt;
}

namespace {

// The value of `--nnodes X` / `--nnodes=X` among the launch arguments; empty when absent.
std::string nnodes_in_launch_args(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--nnodes" && i + 1 < args.size()) return args[i + 1];
    if (str::starts_with(args[i], "--nnodes=")) return args[i].substr(9);
  }
  return "";
}

}  // namespace

bool elastic_in_launch_args(const std::vector<std::string>& args) {
  const std::string v = nnodes_in_launch_args(args);
  auto colon = v.find(':');
  return colon != std::string::npos && str::trim(v.substr(0, colon)) != str::trim(v.substr(colon + 1));
}

void finalize(JobOptions& job, const std::string& cwd) {
  if (job.gpus_per_node > 0 && !job.gres.empty())
    throw Error(fmt::format("both --gpus-per-node {} and --gres {} were given", job.gpus_per_node, job.gres),
                "Use one: --gpus-per-node N is --gres=gpu:N.");
  // The agent pattern's ranks per node may come as `mtrain launch`'s own flag: the script's
  // comments, --cpus-per-task and the launch line must all count the same ranks.
  if (job.pattern == Pattern::AgentPerNode) {
    if (auto n = nproc_in_launch_args(job.launch_args)) {
      if (job.ntasks_per_node != 0 && job.ntasks_per_node != *n)
        throw Error(fmt::format("--ntasks-per-node {} and --nproc-per-node {} disagree", job.ntasks_per_node, *n),
                    "Give one of them: in the agent pattern both mean the ranks each node starts.");
      job.ntasks_per_node = *n;
    }
  }
  if (job.ntasks_per_node == 0) job.ntasks_per_node = job.gpus_per_node > 0 ? job.gpus_per_node : 1;
  if (job.gpus_per_node > 0 && job.ntasks_per_node > job.gpus_per_node)
    throw Error(fmt::format("--ntasks-per-node {} asks for more ranks than the {} GPUs per node",
                            job.ntasks_per_node, job.gpus_per_node),
                "More tasks than the allocation has: use at most one rank per GPU, or ask for more GPUs.");
  if (!job.signal.empty() && !job.time.empty()) {
    long long limit = time_seconds(job.time);
    long long before = std::stoll(job.signal.substr(job.signal.find('@') + 1));
    if (limit > 0 && before >= limit)
      throw Error(fmt::format("--signal {} fires {} s before a time limit of only {} s", job.signal, before, limit),
                  "Give the signal fewer seconds (--signal USR1@30) or a longer --time.");
  }
  if (job.requeue && job.signal.empty())
    throw Error("--requeue needs a signal to act on, but --signal is none",
                "Keep the default --signal USR1@90 or give one.");
  if (job.pattern == Pattern::TaskPerGpu && job.program.empty())
    throw Error("the task pattern needs a PROGRAM after --",
                "Add `-- python3 train.py …`, or use --pattern agent to run the bundled trainer.");
  if (job.pattern == Pattern::TaskPerGpu && !job.launch_args.empty())
    throw Error(fmt::format("unknown option '{}' (the task pattern runs no `mtrain launch`)", job.launch_args.front()),
                "Options for mtrain launch need --pattern agent; see `mtrain slurm submit --help`.");
  if (elastic_in_launch_args(job.launch_args)) {
    // MIN:MAX counts the allocation's nodes: fewer than MIN can never form, more than MAX
    // would be nodes that wait the whole job.
    const std::string v = nnodes_in_launch_args(job.launch_args);
    auto min = str::parse_uint(str::trim(v.substr(0, v.find(':'))));
    auto max = str::parse_uint(str::trim(v.substr(v.find(':') + 1)));
    if (min && max && (static_cast<long long>(*min) > job.nodes || static_cast<long long>(*max) < job.nodes))
      throw Error(fmt::format("--nnodes {} does not fit an allocation of --nodes {}", v, job.nodes),
                  fmt::format("Ask Slurm for MAX nodes and give MIN:MAX with MIN <= {} <= MAX, e.g. --nodes 3 --nnodes 2:3.",
                              job.nodes));
  }
  if (job.job_name.empty()) throw Error("--job-name is empty");
  // A name is a label for squeue and sacct (whose database column holds 255 bytes); a huge one
  // only bloats every script, log line and query that carries it.
  constexpr size_t kMaxJobName = 200;
  if (job.job_name.size() > kMaxJobName)
    throw Error(fmt::format("--job-name is {} bytes long; at most {} are accepted", job.job_name.size(), kMaxJobName),
                "Give the job a short label; put long descriptions in the job's config file.");
  fs::path base = job.chdir.empty() ? fs::path(cwd) : fs::path(job.chdir);
  if (job.output.empty()) job.output = (base / "mtrain-slurm" / "%x-%j.out").string();
  if (job.mtrain.empty()) throw Error("the path of mtrain for the compute nodes is unknown", "Pass --mtrain PATH.");
}

}  // namespace mtrain::slurm

#include "mtrain/slurm/job_options.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "mtrain/config/registry.hpp"
#include "mtrain/config/slurm_values.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/yaml_input.hpp"
#include "mtrain/core/strings.hpp"

namespace mtrain::slurm {

namespace fs = std::filesystem;

namespace {

// The registry's key of a Slurm setting: "ntasks-per-node", "ntasks_per_node" or
// "slurm.ntasks_per_node" → "slurm.ntasks_per_node".
std::string registry_key(std::string key) {
  if (str::starts_with(key, "slurm.")) key = key.substr(6);
  std::replace(key.begin(), key.end(), '-', '_');
  return "slurm." + key;
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

using json = config::json;
using Bind = std::function<void(JobOptions&, const json&)>;

// Each slurm.* setting of the registry (lib/config/launch_settings.cpp: type, default, help,
// flag, checks) → the JobOptions field it sets. Values arrive checked; a list setting's value
// is an array whose items are appended.
const std::map<std::string, Bind>& bindings() {
  using J = JobOptions;
  auto text = [](std::string J::*field) -> Bind { return [field](J& j, const json& v) { j.*field = v.get<std::string>(); }; };
  auto number = [](int J::*field) -> Bind { return [field](J& j, const json& v) { j.*field = v.get<int>(); }; };
  auto flag = [](bool J::*field) -> Bind { return [field](J& j, const json& v) { j.*field = v.get<bool>(); }; };
  auto list = [](std::vector<std::string> J::*field) -> Bind {
    return [field](J& j, const json& v) {
      for (const auto& item : v) (j.*field).push_back(item.get<std::string>());
    };
  };
  static const std::map<std::string, Bind> t = {
      {"slurm.job_name", text(&J::job_name)},
      {"slurm.partition", text(&J::partition)},
      {"slurm.nodes", number(&J::nodes)},
      {"slurm.ntasks_per_node", number(&J::ntasks_per_node)},
      {"slurm.gpus_per_node", number(&J::gpus_per_node)},
      {"slurm.gres", text(&J::gres)},
      {"slurm.cpus_per_task", number(&J::cpus_per_task)},
      {"slurm.mem", text(&J::mem)},
      {"slurm.time", text(&J::time)},
      {"slurm.account", text(&J::account)},
      {"slurm.qos", text(&J::qos)},
      {"slurm.constraint", text(&J::constraint)},
      {"slurm.exclusive", flag(&J::exclusive)},
      {"slurm.output", text(&J::output)},
      {"slurm.error", text(&J::error)},
      {"slurm.export",
       [](J& j, const json& v) {
         // "A,B" names two variables; "A=x,y" is one assignment whose value has a comma.
         for (const auto& item : v) {
           const std::string e = item.get<std::string>();
           for (auto& part : e.find('=') == std::string::npos ? str::split(e, ',') : std::vector<std::string>{e})
             if (!str::trim(part).empty()) j.exports.push_back(str::trim(part));
         }
       }},
      {"slurm.sbatch", list(&J::sbatch_lines)},
      {"slurm.setup", list(&J::setup)},
      {"slurm.signal", [](J& j, const json& v) { j.signal = config::normalize_slurm_signal(v.get<std::string>()); }},
      {"slurm.requeue", flag(&J::requeue)},
      {"slurm.pattern",
       [](J& j, const json& v) {
         j.pattern = config::choice_from_text<Pattern>(v.get<std::string>(), "slurm.pattern");
       }},
      {"slurm.template", text(&J::template_file)},
      {"slurm.mtrain", text(&J::mtrain)},
      {"slurm.chdir", text(&J::chdir)},
  };
  return t;
}

const config::Setting& require_slurm(const std::string& key_in) {
  const auto& reg = config::job_registry();
  if (const auto* s = reg.find(registry_key(key_in)); s && s->scope == config::Scope::Slurm) return *s;
  std::vector<std::string> keys;
  for (const auto& s : reg.all())
    if (s.scope == config::Scope::Slurm) keys.push_back(config::cli_flag(s));
  std::string k = key_in;
  std::replace(k.begin(), k.end(), '_', '-');
  auto near = str::closest(k, keys);
  throw Error(fmt::format("unknown Slurm setting '{}'", key_in),
              near ? fmt::format("Did you mean '{}'?", *near) : "Known settings: " + str::join(keys, ", "));
}

}  // namespace

const std::vector<SettingInfo>& job_settings() {
  static const std::vector<SettingInfo> infos = [] {
    std::vector<SettingInfo> v;
    for (const auto& s : config::job_registry().all())
      if (s.scope == config::Scope::Slurm)
        v.push_back({config::cli_flag(s), s.help, s.list, s.type == config::Type::Bool});
    return v;
  }();
  return infos;
}

std::vector<std::string> unbound_settings() {
  std::vector<std::string> out;
  for (const auto& s : config::job_registry().all())
    if (s.scope == config::Scope::Slurm && !bindings().count(s.key)) out.push_back(s.key);
  for (const auto& [key, bind] : bindings())
    if (!config::job_registry().find(key)) out.push_back(key);
  return out;
}


void set_value(JobOptions& job, const std::string& key, const json& value) {
  const config::Setting& s = require_slurm(key);
  auto it = bindings().find(s.key);
  if (it == bindings().end()) throw Error(fmt::format("Slurm setting '{}' is not bound to a job option", s.key), "", kExitFailure);
  it->second(job, config::job_registry().check_value(s, value));
}

void apply_setting(JobOptions& job, const std::string& key, const std::string& value) {
  const config::Setting& s = require_slurm(key);
  // A bare boolean flag (`--exclusive` in a YAML list or an empty scalar) means true.
  const std::string text = s.type == config::Type::Bool && str::trim(value).empty() ? "true" : value;
  set_value(job, key, config::job_registry().parse_text(s, text));
}

JobOptions job_options_from(const json& resolved) {
  JobOptions job;
  for (const auto& s : config::job_registry().all())
    if (s.scope == config::Scope::Slurm) set_value(job, s.key, config::get(resolved, s.key));
  return job;
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
        if (!require_slurm(key).list) throw Error(fmt::format("'{}' takes one value, not a list", key));
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

#include "lib/slurm/job_options.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "lib/config/compat_flags.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/slurm_time.hpp"
#include "lib/config/slurm_values.hpp"
#include "lib/core/error.hpp"
#include "lib/core/node_count.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::slurm {

namespace fs = std::filesystem;

namespace {

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


JobOptions job_options_from(const json& resolved) {
  JobOptions job;
  for (const auto& s : config::job_registry().all()) {
    if (s.scope != config::Scope::Slurm) continue;
    const auto it = bindings().find(s.key);
    if (it == bindings().end())
      throw Error(fmt::format("Slurm setting '{}' is not bound to a job option", s.key), "", kExitFailure);
    it->second(job, config::job_registry().check_value(s, config::get(resolved, s.key)));
  }
  return job;
}

std::optional<std::string> launch_arg_value(const std::vector<std::string>& args, const std::string& key) {
  const std::vector<std::string> names = config::flag_spellings(key);
  for (size_t i = 0; i < args.size(); ++i)
    for (const auto& n : names) {
      if (args[i] == n && i + 1 < args.size()) return args[i + 1];
      if (str::starts_with(args[i], n + "=")) return args[i].substr(n.size() + 1);
    }
  return std::nullopt;
}

std::optional<int> nproc_in_launch_args(const std::vector<std::string>& args) {
  const auto value = launch_arg_value(args, "launch.nproc_per_node");
  if (!value) return std::nullopt;
  const auto v = str::parse_uint(*value);
  if (v && *v >= 1 && *v <= 4096) return static_cast<int>(*v);
  return std::nullopt;  // auto/cpu/gpu: counted on the node
}

namespace {

// --nnodes MIN:MAX among the launch arguments, read as `mtrain launch` reads it; none when
// absent, not elastic, or not a node count (the launch refuses that itself).
std::optional<NodeCount> elastic_nnodes(const std::vector<std::string>& args) {
  const auto value = launch_arg_value(args, "launch.nnodes");
  if (!value) return std::nullopt;
  const NodeCountReading r = read_nnodes(*value);
  if (!r.problem.empty() || !r.count.elastic()) return std::nullopt;
  return r.count;
}

}  // namespace

bool elastic_in_launch_args(const std::vector<std::string>& args) { return elastic_nnodes(args).has_value(); }

std::optional<std::string> launch_value(const JobOptions& job, const std::string& key) {
  if (auto v = launch_arg_value(job.launch_args, key)) return v;
  const auto it = job.launch_settings.find(key);
  if (it == job.launch_settings.end() || it->second.empty()) return std::nullopt;
  return it->second;
}

namespace {

std::optional<NodeCount> elastic_count(const JobOptions& job) {
  const auto value = launch_value(job, "launch.nnodes");
  if (!value) return std::nullopt;
  const NodeCountReading r = read_nnodes(*value);
  if (!r.problem.empty() || !r.count.elastic()) return std::nullopt;
  return r.count;
}

}  // namespace

bool elastic_job(const JobOptions& job) { return elastic_count(job).has_value(); }

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
    const long long limit = config::read_slurm_time(job.time).seconds;
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
  if (const auto n = elastic_count(job)) {
    // MIN:MAX counts the allocation's nodes: fewer than MIN can never form, more than MAX
    // would be nodes that wait the whole job.
    if (n->min > job.nodes || n->max < job.nodes)
      throw Error(fmt::format("--nnodes {}:{} does not fit an allocation of --nodes {}", n->min, n->max, job.nodes),
                  fmt::format("Ask Slurm for MAX nodes and give MIN:MAX with MIN <= {} <= MAX, e.g. --nodes 3 --nnodes 2:3.",
                              job.nodes));
  }
  // Inside the allocation an elastic job's endpoint defaults to the first node's store; etcd has
  // no such default, and finding that out on the compute nodes would waste the queue wait.
  const auto backend = launch_value(job, "launch.rdzv_backend");
  if (backend && *backend == "etcd" && !launch_value(job, "launch.rdzv_endpoint"))
    throw Error("--rdzv-backend etcd needs --rdzv-endpoint with the etcd cluster's members",
                "Add --rdzv-endpoint etcd-1:2379,etcd-2:2379,etcd-3:2379 (members every compute node reaches).");
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

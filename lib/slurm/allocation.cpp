#include "lib/slurm/allocation.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::slurm {

namespace {

const std::string* find(const Env& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() || it->second.empty() ? nullptr : &it->second;
}

const std::string* first_of(const Env& env, std::initializer_list<const char*> keys, std::string* which) {
  for (const char* k : keys)
    if (const auto* v = find(env, k)) {
      if (which) *which = k;
      return v;
    }
  return nullptr;
}

int env_int(const Env& env, const std::string& key, int fallback) {
  const auto* v = find(env, key);
  if (!v) return fallback;
  auto n = str::parse_uint(str::trim(*v));
  if (!n || *n > 1'000'000'000)
    throw Error(fmt::format("{}='{}' is not a non-negative number", key, *v),
                "This variable is set by Slurm; check that the job environment was not edited.");
  return static_cast<int>(*n);
}

std::vector<int> int_list(const std::string& text, const std::string& var) {
  std::vector<int> out;
  for (const auto& part : str::split(text, ',')) {
    auto n = str::parse_uint(str::trim(part));
    if (!n || *n > 1'000'000)
      throw Error(fmt::format("{}='{}': '{}' is not a GPU index", var, text, part),
                  "Slurm lists GPUs as comma-separated indices, e.g. 0,1,2,3");
    out.push_back(static_cast<int>(*n));
  }
  return out;
}

bool parses_as_ints(const std::string& text) {
  for (const auto& part : str::split(text, ','))
    if (!str::parse_uint(str::trim(part))) return false;
  return true;
}

}  // namespace

int master_port_for_job(const std::string& job_id) {
  // Array and het jobs ("123_4", "123+1"): hash every digit so each task gets its own port.
  unsigned long long h = 0;
  bool digits = !job_id.empty();
  for (char c : job_id) digits = digits && c >= '0' && c <= '9';
  if (digits && job_id.size() <= 18) {
    h = std::stoull(job_id);
  } else {
    for (char c : job_id) h = h * 131 + static_cast<unsigned char>(c);
  }
  return 29500 + static_cast<int>(h % 2500);
}

namespace {

// The node list, and whether it is a step's (inside srun) or the job's: `list_var` names the
// variable it came from, for the errors that follow.
void read_nodes(const Env& env, Allocation& a, std::string& list_var) {
  const auto* list = first_of(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}, &list_var);
  if (!list)
    throw Error(fmt::format("SLURM_JOB_ID={} is set but no SLURM_JOB_NODELIST", a.job_id),
                "Run inside an allocation made by sbatch, salloc or srun, or unset SLURM_JOB_ID.");
  a.in_step = list_var == "SLURM_STEP_NODELIST";
  try {
    a.nodes = expand_hostlist(*list);
  } catch (Error& e) {
    throw e.at(list_var);
  }
}

// Tasks per node: the step's when inside one, else the job's; else an even split of the task
// count, else one per node. The total must agree with the task count when both are given.
void read_tasks(const Env& env, Allocation& a, const std::string& list_var) {
  const int nnodes = static_cast<int>(a.nodes.size());
  std::string tvar;
  const auto* tpn = a.in_step ? first_of(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}, &tvar)
                              : first_of(env, {"SLURM_TASKS_PER_NODE"}, &tvar);
  int ntasks = a.in_step ? env_int(env, "SLURM_STEP_NUM_TASKS", 0) : 0;
  if (ntasks == 0) ntasks = env_int(env, "SLURM_NTASKS", env_int(env, "SLURM_NPROCS", 0));
  if (tpn) {
    try {
      a.tasks_per_node = expand_counts(*tpn, tvar);
    } catch (Error& e) {
      throw e.at(tvar);
    }
    if (static_cast<int>(a.tasks_per_node.size()) != nnodes)
      throw Error(fmt::format("{}='{}' describes {} nodes but {}='{}' has {}", tvar, *tpn,
                              a.tasks_per_node.size(), list_var, env.at(list_var), nnodes),
                  "The Slurm environment is inconsistent; was it copied from another job?");
  } else if (int per = env_int(env, "SLURM_NTASKS_PER_NODE", 0); per > 0) {
    a.tasks_per_node.assign(nnodes, per);
  } else if (ntasks > 0 && ntasks % nnodes == 0) {
    a.tasks_per_node.assign(nnodes, ntasks / nnodes);
  } else {
    a.tasks_per_node.assign(nnodes, 1);
  }
  int total = std::accumulate(a.tasks_per_node.begin(), a.tasks_per_node.end(), 0);
  a.ntasks = ntasks > 0 ? ntasks : total;
  if (a.ntasks != total)
    throw Error(fmt::format("SLURM_NTASKS={} but the nodes hold {} tasks ({})", a.ntasks, total,
                            tpn ? *tpn : std::string("even split")),
                "More tasks than the allocation has: ask for fewer tasks or more nodes.");
}

// This task's place: its node, its rank in the step and on the node, each within the allocation.
void read_position(const Env& env, Allocation& a, const std::string& list_var) {
  const int nnodes = static_cast<int>(a.nodes.size());
  a.node_id = env_int(env, "SLURM_NODEID", 0);
  a.procid = env_int(env, "SLURM_PROCID", 0);
  a.localid = env_int(env, "SLURM_LOCALID", 0);
  if (a.node_id >= nnodes)
    throw Error(fmt::format("SLURM_NODEID={} but the allocation has {} node(s) ({})", a.node_id, nnodes,
                            env.at(list_var)),
                "The Slurm environment is inconsistent; was it copied from another job?");
  a.ntasks_per_node = a.tasks_per_node[a.node_id];
  if (a.localid >= a.ntasks_per_node)
    throw Error(fmt::format("SLURM_LOCALID={} but node {} runs {} task(s)", a.localid,
                            a.nodes[a.node_id], a.ntasks_per_node),
                "More tasks than the allocation has on this node.");
  if (a.procid >= a.ntasks)
    throw Error(fmt::format("SLURM_PROCID={} but the step has {} task(s)", a.procid, a.ntasks),
                "More tasks than the allocation has.");
}

// GPUs: Slurm's CUDA_VISIBLE_DEVICES is what is valid inside the job's device cgroup (it may be
// renumbered); the SLURM_*_GPUS lists are physical ids; SLURM_GPUS_ON_NODE is only a count.
void read_gpus(const Env& env, Allocation& a) {
  std::string var;
  const auto* slurm_gpus = first_of(env, {"SLURM_STEP_GPUS", "SLURM_JOB_GPUS"}, &var);
  const auto* cvd = find(env, "CUDA_VISIBLE_DEVICES");
  if (slurm_gpus && cvd && parses_as_ints(*cvd)) {
    a.gpus_on_node = int_list(*cvd, "CUDA_VISIBLE_DEVICES");
  } else if (slurm_gpus) {
    a.gpus_on_node = int_list(*slurm_gpus, var);
  } else if (int n = env_int(env, "SLURM_GPUS_ON_NODE", 0); n > 0) {
    for (int i = 0; i < n; ++i) a.gpus_on_node.push_back(i);
  }
}

// The first node, on a port derived from the job id unless MASTER_PORT names one.
void read_master(const Env& env, Allocation& a) {
  a.master_addr = a.nodes.front();
  a.master_port = master_port_for_job(a.job_id);
  if (const auto* p = find(env, "MASTER_PORT")) {
    auto n = str::parse_uint(*p);
    if (!n || *n == 0 || *n > 65535)
      throw Error(fmt::format("MASTER_PORT='{}' is not a port number", *p),
                  "Unset MASTER_PORT to use the port derived from the job id.");
    a.master_port = static_cast<int>(*n);
  }
}

}  // namespace

std::optional<Allocation> allocation_from_env(const Env& env) {
  const auto* job = first_of(env, {"SLURM_JOB_ID", "SLURM_JOBID"}, nullptr);
  if (!job) return std::nullopt;
  Allocation a;
  a.job_id = *job;
  std::string list_var;
  read_nodes(env, a, list_var);
  read_tasks(env, a, list_var);
  read_position(env, a, list_var);
  read_gpus(env, a);
  read_master(env, a);
  a.restart_count = env_int(env, "SLURM_RESTART_COUNT", 0);
  a.cpus_on_node = env_int(env, "SLURM_CPUS_ON_NODE", 0);
  return a;
}

int rendezvous_port_for_job(const std::string& job_id) { return master_port_for_job(job_id) - 2500; }

StepRendezvous step_rendezvous(const Allocation& a, const Env& env) {
  if (a.nodes.empty() || a.node_id >= static_cast<int>(a.nodes.size()))
    throw Error("the Slurm allocation has no node for this task");
  StepRendezvous r;
  r.endpoint = fmt::format("{}:{}", a.nodes.front(), rendezvous_port_for_job(a.job_id));
  r.node_name = a.nodes[a.node_id];
  r.run_id = "slurm-" + a.job_id;
  if (const auto* step = find(env, "SLURM_STEP_ID")) r.run_id += "." + *step;
  r.holds_store = a.node_id == 0;
  return r;
}

int contiguous_rank(const Allocation& a) {
  int before = 0;
  for (int n = 0; n < a.node_id && n < static_cast<int>(a.tasks_per_node.size()); ++n)
    before += a.tasks_per_node[n];
  return before + a.localid;
}

Env rank_env_from_slurm(const Allocation& a, const TaskEnvOptions& opt) {
  if (a.nodes.empty() || a.node_id >= static_cast<int>(a.nodes.size()))
    throw Error("the Slurm allocation has no node for this task");
  const std::string& host = a.nodes[a.node_id];
  if (!a.gpus_on_node.empty() && a.ntasks_per_node > static_cast<int>(a.gpus_on_node.size()))
    throw Error(fmt::format("node {} runs {} tasks but this task sees {} GPU(s) ({})", host,
                            a.ntasks_per_node, a.gpus_on_node.size(), str::join([&] {
                              std::vector<std::string> s;
                              for (int g : a.gpus_on_node) s.push_back(std::to_string(g));
                              return s;
                            }(), ",")),
                "Ask for at least one GPU per task on each node (--gpus-per-node ≥ --ntasks-per-node, "
                "not --gpus-per-task, so LOCAL_RANK can index the node's GPUs).");
  const int rank = contiguous_rank(a);
  if (rank >= a.ntasks)
    throw Error(fmt::format("task {} on node {} would be rank {} of {}", a.localid, host, rank, a.ntasks),
                "More tasks than the allocation has.");
  Env e;
  auto s = [](long long v) { return std::to_string(v); };
  e["RANK"] = s(rank);
  e["LOCAL_RANK"] = s(a.localid);
  e["WORLD_SIZE"] = s(a.ntasks);
  e["LOCAL_WORLD_SIZE"] = s(a.ntasks_per_node);
  e["GROUP_RANK"] = s(a.node_id);
  e["GROUP_WORLD_SIZE"] = s(static_cast<long long>(a.nodes.size()));
  e["ROLE_RANK"] = s(rank);
  e["ROLE_WORLD_SIZE"] = s(a.ntasks);
  e["ROLE_NAME"] = opt.role_name.empty() ? "default" : opt.role_name;
  e["MASTER_ADDR"] = a.master_addr;
  e["MASTER_PORT"] = s(a.master_port);
  e["TORCHELASTIC_RESTART_COUNT"] = s(a.restart_count);
  e["TORCHELASTIC_MAX_RESTARTS"] = s(opt.max_restarts);
  e["TORCHELASTIC_RUN_ID"] = a.job_id;
  e["TORCHELASTIC_USE_AGENT_STORE"] = "False";
  std::string dir = opt.error_dir.empty() ? "/tmp" : opt.error_dir;
  e["TORCHELASTIC_ERROR_FILE"] = fmt::format("{}/mtrain-{}-error-{}.json", dir, a.job_id, rank);
  if (!opt.omp_threads_already_set) {
    int cpus = opt.cpus_on_node > 0 ? opt.cpus_on_node : a.cpus_on_node;
    e["OMP_NUM_THREADS"] = s(std::max(1, cpus > 0 ? cpus / std::max(1, a.ntasks_per_node) : 1));
  }
  std::vector<std::string> gpus;
  for (int g : a.gpus_on_node) gpus.push_back(std::to_string(g));
  if (!gpus.empty()) e["CUDA_VISIBLE_DEVICES"] = str::join(gpus, ",");
  e["MTRAIN_JOB_ID"] = a.job_id;
  e["MTRAIN_HOST"] = host;
  e["MTRAIN_GPU"] = gpus.empty() ? "" : gpus[a.localid];
  return e;
}

}  // namespace mtrain::slurm

#include "lib/launch/launch_decision.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "lib/config/export.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/job_id.hpp"
#include "lib/launch/launch_mode.hpp"
#include "lib/launch/multinode.hpp"
#include "lib/slurm/allocation.hpp"
#include "lib/topology/filter.hpp"
#include "lib/config/job_view.hpp"
#include "lib/launch/host_selection.hpp"

namespace fs = std::filesystem;

namespace mtrain::launch {

namespace {

int resolve_port(const config::MasterPort& port, const std::string& addr, LaunchProbes& probes) {
  return port.pick_free ? probes.free_port(addr) : port.number;
}

// The master address of a node that holds the master itself: as given, else this machine.
std::string master_addr_here(const plan::PlanOptions& p) { return p.master_addr.empty() ? "127.0.0.1" : p.master_addr; }

// An elastic job inside a Slurm step (`--nnodes MIN:MAX`, one agent task per node, as
// `mtrain slurm submit` starts it): the node rendezvous, with the endpoint, node names and run id
// every node derives alike from the allocation (slurm::step_rendezvous). Returns whether this
// node holds the store; nullopt when this is no such step.
std::optional<bool> apply_slurm_elastic(LaunchOptions& opt, const EnvMap& env) {
  auto& m = opt.multi;
  if (opt.launcher == config::LauncherKind::Local || m.ssh_agent || m.nnodes.empty() || !rendezvous::parse_nnodes(m.nnodes).elastic())
    return std::nullopt;
  auto a = slurm::allocation_from_env(env);
  if (!a || !a->in_step || a->ntasks_per_node != 1) return std::nullopt;
  const auto r = slurm::step_rendezvous(*a, env);
  if (m.rdzv_backend == config::RdzvBackend::Static) m.rdzv_backend = config::RdzvBackend::Mtrain;
  // etcd's members are the user's to give (agent_options refuses their absence); the first
  // node's address is a store only the mtrain backend would hold there.
  if (m.rdzv_endpoint.empty() && m.rdzv_backend != config::RdzvBackend::Etcd) m.rdzv_endpoint = r.endpoint;
  if (m.node_name.empty()) m.node_name = r.node_name;
  if (opt.plan.rdzv_id.empty()) opt.plan.rdzv_id = r.run_id;
  if (!opt.master_port_given) opt.master_port = config::MasterPort::port(a->master_port);
  return r.holds_store;
}

// One agent per node inside a Slurm step: every node's agent derives the same world from Slurm's
// environment, so no node mistakes itself for the master and the port is the job's own.
// Returns whether Slurm gave this node its place.
bool apply_slurm(LaunchOptions& opt, const EnvMap& env, std::string& job_id_source) {
  if (opt.launcher == config::LauncherKind::Local) return false;
  auto a = slurm::allocation_from_env(env);
  bool agent_step = a && a->in_step && a->ntasks_per_node == 1;
  if (opt.launcher == config::LauncherKind::Slurm && !agent_step)
    throw UsageError("--launcher slurm needs to run inside an srun step with one task per node",
                     "Start it as `srun --ntasks-per-node=1 mtrain launch …` inside an allocation, or use "
                     "`mtrain slurm submit`.");
  if (!agent_step) return false;
  auto& p = opt.plan;
  p.nnodes = static_cast<int>(a->nodes.size());
  p.node_rank = a->node_id;
  if (p.master_addr.empty()) p.master_addr = a->master_addr;
  if (!opt.master_port_given) opt.master_port = config::MasterPort::port(a->master_port);
  if (p.job_id.empty()) {
    // Per step: two steps of one allocation are two jobs (their own run folders, job files).
    // Every node of a step sees the same SLURM_STEP_ID.
    p.job_id = "slurm-" + a->job_id;
    auto step = env.find("SLURM_STEP_ID");
    if (step != env.end() && !step->second.empty()) p.job_id += "." + step->second;
    job_id_source = "the Slurm default slurm-$SLURM_JOB_ID.$SLURM_STEP_ID";
  }
  return true;
}

// One host that is this machine: run its slots here (no ssh).
bool is_this_machine(const topology::Inventory& hosts, LaunchProbes& probes) {
  return hosts.size() == 1 && hosts[0].user.empty() && probes.names_this_machine(hosts[0].host);
}

// The store the ssh launcher holds: --rdzv-endpoint, else this machine's address on the way to
// the first host (the agents can reach it there).
rendezvous::Endpoint ssh_store_endpoint(const LaunchOptions& opt, const topology::Inventory& hosts,
                                        const plan::HostFacts& facts, LaunchProbes& probes) {
  if (!opt.multi.rdzv_endpoint.empty()) return endpoint_of(opt.multi);
  rendezvous::Endpoint ep;
  ep.port = static_cast<uint16_t>(opt.multi.rdzv_port);
  ep.host = probes.route_source_address(hosts.front().host, 22);
  // A plan is printed offline too (hosts not resolvable from here, no network): the endpoint is
  // then this machine by name; a real launch needs the address and stops here without it.
  if (ep.host.empty() && opt.dry_run) {
    ep.host = facts.hostname;
    probes.note(fmt::format("mtrain: note: '{}' does not resolve or route from here; the plan shows the rendezvous "
                            "endpoint as this machine's name",
                            hosts.front().host));
  }
  if (ep.host.empty())
    throw UsageError(
        fmt::format("cannot find this machine's address towards '{}' for the rendezvous store", hosts.front().host),
        "Give --rdzv-endpoint ADDRESS:PORT with an address of this machine the hosts can reach.");
  return ep;
}

// The interpreter of PROGRAM.py and -m, as an absolute path so that --dry-run shows which one.
void resolve_python(plan::PlanOptions& p, const EnvMap& env, LaunchProbes& probes) {
  if (!plan::runs_with_python(p)) return;
  try {
    p.python = probes.resolve_program(p.python, env);
  } catch (const Error& e) {
    throw UsageError(fmt::format("{} runs with Python, but {}", p.program.front(), e.message()),
                     "Give the interpreter with --python PATH (or MTRAIN_PYTHON), or --no-python to execute the "
                     "program itself.");
  }
}

// --launcher slurm-task: srun started this rank; it only execs the program.
LaunchDecision decide_slurm_task(LaunchOptions opt, const EnvMap& env) {
  LaunchDecision d;
  d.mode = LaunchMode::slurm_task;
  d.slurm_task.role_name = opt.plan.role;
  d.slurm_task.max_restarts = opt.plan.max_restarts;
  d.slurm_task.omp_threads_already_set = env.count("OMP_NUM_THREADS") > 0;
  if (opt.plan.program.empty())
    throw UsageError("--launcher slurm-task needs a program after `--`",
                     "e.g. `srun … mtrain launch --launcher slurm-task -- python3 train.py`.");
  d.options = std::move(opt);
  return d;
}

bool elastic_nnodes(const MultiNodeOptions& m) { return !m.nnodes.empty() && rendezvous::parse_nnodes(m.nnodes).elastic(); }

// What every mode but slurm_task settles first, in this order: the rendezvous backend (an elastic
// Slurm step brings its own), Slurm's world for a node of a step, a fixed --nnodes, the host's
// facts, the job id and the hostfile's hosts.
struct Gathered {
  bool node_rendezvous = false;  // --rdzv-backend mtrain
  bool slurm_step = false;
  std::optional<bool> slurm_store_here;  // an elastic Slurm step: does this node hold the store
};

Gathered gather(LaunchOptions& opt, const EnvMap& env, LaunchProbes& probes, LaunchDecision& d) {
  auto& m = opt.multi;
  auto& p = opt.plan;
  Gathered g;
  if (m.rdzv_backend == config::RdzvBackend::C10d) m.rdzv_backend = config::RdzvBackend::Mtrain;
  g.slurm_store_here = apply_slurm_elastic(opt, env);
  g.node_rendezvous = m.rdzv_backend == config::RdzvBackend::Mtrain || m.rdzv_backend == config::RdzvBackend::Etcd;
  const bool agent = m.ssh_agent || g.node_rendezvous;
  d.job_id_source = "--job-id / MTRAIN_JOB_ID / launch.job_id";
  if (!agent) {
    g.slurm_step = apply_slurm(opt, env, d.job_id_source);
    if (!m.nnodes.empty()) {
      // MIN:MAX: the dynamic rendezvous, or the ssh launcher's store over a hostfile's hosts
      // (checked against the hosts in decide_ssh_launcher).
      auto n = rendezvous::parse_nnodes(m.nnodes);
      if (n.elastic() && m.hostfile.empty())
        throw UsageError(
            fmt::format("--nnodes {} (MIN:MAX) needs the dynamic rendezvous or the ssh launcher", m.nnodes),
            "Add --rdzv-backend mtrain --rdzv-endpoint HOST:PORT, or --hostfile FILE (started over ssh), "
            "or give a fixed --nnodes N.");
      if (!n.elastic()) p.nnodes = n.max;
    }
  }
  d.facts = probes.host(env);
  if (p.job_id.empty() && agent && !p.rdzv_id.empty()) {
    p.job_id = p.rdzv_id;  // the same on every node
    d.job_id_source = "--rdzv-id";
  }
  if (p.job_id.empty()) p.job_id = probes.new_job_id();
  check_job_id(p.job_id, d.job_id_source);  // it names folders: a name, never a path
  if (!m.ssh_agent) d.hosts = selected_hosts(opt, probes);
  if (d.hosts) {  // --include/--exclude chose the hostfile's hosts and slots, not this machine's GPUs
    p.include.clear();
    p.exclude.clear();
  }
  return g;
}

// Where the hostfile puts a launcher that is no node agent; node K and this machine take their
// slots from it here.
HostfilePlace place_on_hostfile(LaunchOptions& opt, const topology::Inventory& hosts, LaunchProbes& probes) {
  auto& m = opt.multi;
  auto& p = opt.plan;
  const bool elastic = elastic_nnodes(m);
  if (elastic && (m.node_rank_given || opt.launcher == config::LauncherKind::Local))
    throw UsageError(fmt::format("--nnodes {} (MIN:MAX) needs a rendezvous that can re-form the job", m.nnodes),
                     "Let the ssh launcher start the hostfile's hosts (no --node-rank), or start each node with "
                     "--rdzv-backend mtrain --rdzv-endpoint HOST:PORT.");
  if (m.node_rank_given) {
    apply_hostfile_node(p, hosts, p.node_rank);  // static node K of the hostfile's world
    return HostfilePlace::node_k;
  }
  if (opt.launcher == config::LauncherKind::Ssh || !is_this_machine(hosts, probes)) return HostfilePlace::other_hosts;
  if (elastic)
    throw UsageError(fmt::format("--nnodes {} (MIN:MAX): the hostfile selects only this machine, which runs "
                                 "without a node rendezvous",
                                 m.nnodes),
                     "Give a fixed --nnodes, or --launcher ssh to start even this machine's agent over ssh.");
  apply_hostfile_node(p, hosts, 0);  // one host, this machine: its slots, no ssh
  p.master_addr.clear();
  p.node_name.clear();
  return HostfilePlace::this_machine;
}

// A hostfile naming other hosts: hold the store here, one agent per host over ssh. No plan.
LaunchDecision decide_ssh_launcher(LaunchOptions opt, LaunchDecision d, LaunchProbes& probes) {
  const auto& hosts = *d.hosts;
  if (opt.launcher != config::LauncherKind::Auto && opt.launcher != config::LauncherKind::Ssh)
    throw UsageError(fmt::format("the hostfile selects {} other than this machine, but --launcher is {}",
                                 hosts.size() == 1 ? "a host" : "hosts", config::to_string(opt.launcher)),
                     "Use --launcher ssh (the default with a hostfile), or start each node by hand with --node-rank.");
  if (opt.master_port.pick_free)
    throw UsageError("--master-port auto picks a free port on this machine only, not on the first host",
                     "Give a port number free on the first host (default 29500).");
  opt.plan.master_port = resolve_port(opt.master_port, "127.0.0.1", probes);
  if (elastic_nnodes(opt.multi)) {
    const auto n = rendezvous::parse_nnodes(opt.multi.nnodes);
    const int k = static_cast<int>(hosts.size());
    if (k < n.min || k > n.max)
      throw UsageError(fmt::format("--nnodes {} does not fit the {} host{} the hostfile selects", opt.multi.nnodes, k,
                                   k == 1 ? "" : "s"),
                       fmt::format("Give MIN <= {} <= MAX, e.g. --nnodes {}:{}.", k, std::min(n.min, k), k));
  }
  d.rdzv_endpoint = ssh_store_endpoint(opt, hosts, d.facts, probes);
  d.options = std::move(opt);
  return d;
}

// What a node (of any mode but slurm_task and ssh_launcher) needs before its plan: the master
// port, the run folder (a node agent's has its own subfolder), the interpreter, the files the
// job is passed in, and the bundled trainer's argv when no program is given.
void prepare_node_run(LaunchDecision& d, LaunchOptions& opt, const LaunchEnvironment& environment, LaunchProbes& probes,
                      bool agent) {
  const EnvMap& env = environment.vars;
  auto& p = opt.plan;
  // auto: a port free here (a joining node's master address comes from the agreement later).
  p.master_port = resolve_port(opt.master_port, master_addr_here(p), probes);

  // Where per-attempt files live: the log dir if given, else a private temp dir for this job.
  // Nodes of one job may share a file system: each node agent has its own subfolder.
  std::string sub = agent ? "/" + (opt.multi.node_name.empty() ? d.facts.hostname : opt.multi.node_name) : "";
  if (!opt.output.log_dir.empty()) {
    d.run_dir = (fs::path(opt.output.log_dir) / p.job_id).string() + sub;
    opt.output.log_dir = d.run_dir;
  } else {
    // Private to this launcher: a job id is not unique on a machine (every fresh Slurm cluster
    // numbers its jobs from 1, and --job-id is the user's), and a launcher that ends removes its
    // run folder, which must never be another job's.
    auto tmp = env.find("TMPDIR");
    fs::path base = tmp != env.end() && !tmp->second.empty() ? fs::path(tmp->second) : fs::path("/tmp");
    if (base.is_relative()) base = fs::path(environment.cwd) / base;
    const std::string unique = p.job_id + "." + probes.random_token().substr(0, 16);
    d.run_dir = (base / unique).string() + sub;
    d.temp_run_dir = true;
  }
  p.error_file_dir = d.run_dir;
  // Watched with --heartbeat-timeout, else once the rank beats (progress_watch.hpp). A heartbeat
  // file the user exported for a watchdog of their own is left alone unless the flag is given.
  p.heartbeat_file = opt.heartbeat_timeout_s > 0 || !env.count("MTRAIN_HEARTBEAT_FILE");
  resolve_python(p, env, probes);
  d.job_file = (fs::path(d.run_dir) / "job.json").string();
  d.ds_file = (fs::path(d.run_dir) / "ds_config.json").string();
  if (!p.program.empty() && !opt.job_spec_json.empty()) {
    p.extra_env["MTRAIN_JOB_FILE"] = d.job_file;
    switch (opt.pass_config) {
      case config::PassConfig::None: break;
      case config::PassConfig::Deepspeed: p.extra_args = {"--deepspeed_config", d.ds_file}; break;
      case config::PassConfig::Accelerate: {
        config::json job = opt.job;
        config::set(job, "launch.device", config::to_string(p.device));  // a flag's value is not in the job
        for (const auto& [k, v] : config::accelerate_env(job)) p.extra_env[k] = v;
        break;
      }
    }
  }
  if (p.program.empty()) {
    if (opt.worker_path.empty())
      throw UsageError("no program after `--` and the bundled trainer (mtrain-worker) is not installed next to mtrain",
                       "Give a program, e.g. `mtrain launch --nproc-per-node 2 -- python3 train.py`, or build "
                       "mtrain with LibTorch.");
    p.worker_argv = {opt.worker_path, "--job", d.job_file};
  }
}

// The plan of this node (a joining agent's ranks as a one-node preview; --dry-run with a
// hostfile: its whole job), then, unless --dry-run, the checks that touch the system.
// `joining`: an agent whose node rank the rendezvous gives; `holds_master`: the static store's
// node (restarts) or a launcher with no agent.
LaunchDecision plan_and_check(LaunchDecision d, LaunchOptions opt, const EnvMap& env, LaunchProbes& probes,
                              bool agent, bool joining) {
  auto& p = opt.plan;
  if (d.hosts && opt.dry_run && !agent) {
    // The hostfile's whole job, as the ssh launcher would start it.
    d.plan = plan::build_cluster_plan(p, cluster_nodes(*d.hosts), d.facts);
    if (opt.multi.node_rank_given) d.plan = plan::build_plan(p, d.facts);  // this node's part of it
    d.options = std::move(opt);
    return d;
  }
  plan::PlanOptions preview = p;
  if (joining) {  // a static node's part of the job is known: shown as without restarts
    if (preview.master_addr.empty()) preview.master_addr = "127.0.0.1";
    preview.nnodes = 1;
    preview.node_rank = 0;
  }
  d.plan = plan::build_plan(preview, d.facts);
  if (opt.dry_run) {
    d.options = std::move(opt);
    return d;
  }
  // Input checks that touch the system, before anything starts. Rank 0 of the bundled trainer
  // runs here: a work dir held by a live job refuses first (what it holds, its checkpoints
  // included, is that job's); rank 0 still takes the lock itself (and takes over a stale one).
  const bool rank0_here = !joining && d.plan.nodes.at(0).node_rank == 0;
  if (p.program.empty() && rank0_here)
    probes.check_work_dir_free(config::job_view(config::json::parse(opt.job_spec_json)).work_dir);
  if (p.program.empty()) probes.check_job(opt.job_spec_json, joining ? 0 : d.plan.world_size);
  d.program_path = probes.resolve_program(d.plan.nodes.at(0).workers.at(0).argv.at(0), env);
  if (plan::runs_with_python(p) && !p.module && !probes.readable(p.program.front()))
    throw UsageError(fmt::format("program '{}' does not exist or cannot be read", p.program.front()),
                     "Check the path; a PROGRAM ending in .py runs with Python, so it need not be executable.");
  if (rank0_here) {
    probes.check_port_free(d.plan.master_addr, d.plan.master_port);
    // Node 0 holds the restarts' store: a taken port is refused now, not met by a node agent
    // that would take someone else's listener for its store.
    if (agent) probes.check_port_free(d.agent->endpoint.host, d.agent->endpoint.port);
  }
  d.options = std::move(opt);
  return d;
}

// local and slurm_node, and a static node without restarts: ranks here under the supervisor.
LaunchDecision decide_plain_node(LaunchDecision d, LaunchOptions opt, const LaunchEnvironment& environment,
                                 LaunchProbes& probes) {
  opt.plan.master_addr = master_addr_here(opt.plan);
  prepare_node_run(d, opt, environment, probes, false);
  return plan_and_check(std::move(d), std::move(opt), environment.vars, probes, false, false);
}

// A static job of several nodes with restarts: each node runs as an agent of a fixed-size node
// rendezvous held by node 0, so that every node restarts together (static_agent_options).
LaunchDecision decide_static_node(LaunchDecision d, LaunchOptions opt, const LaunchEnvironment& environment,
                                  LaunchProbes& probes) {
  auto& p = opt.plan;
  if (p.nnodes <= 1 || p.max_restarts <= 0) return decide_plain_node(std::move(d), std::move(opt), environment, probes);
  opt.multi.node_name = static_node_name(p);
  p.master_addr = master_addr_here(p);
  prepare_node_run(d, opt, environment, probes, true);
  std::string note;
  d.agent = static_agent_options(opt, p, d.hosts, environment.vars, &note);
  if (!note.empty()) probes.note("mtrain: note: " + note);
  p.rdzv_backend = config::RdzvBackend::Mtrain;
  p.rdzv_endpoint = d.agent->endpoint.str();
  return plan_and_check(std::move(d), std::move(opt), environment.vars, probes, true, false);
}

// dynamic_node and ssh_agent: join the store; the node rank and node 0's address come from the
// agreement, so the plan is a one-node preview.
LaunchDecision decide_joining_node(LaunchDecision d, LaunchOptions opt, const LaunchEnvironment& environment,
                                   LaunchProbes& probes, std::optional<bool> slurm_store_here) {
  auto& m = opt.multi;
  auto& p = opt.plan;
  if (d.hosts && !m.node_name.empty()) {
    // A node started by hand with the job's hostfile takes its slots from its line.
    if (const auto* h = topology::find_host(*d.hosts, m.node_name)) {
      if (!p.nproc_per_node) p.nproc_per_node = config::RankCount::count(static_cast<int>(h->slots.size()));
    } else {
      throw UsageError(fmt::format("--node-name '{}' is not in the hostfile {}", m.node_name, m.hostfile),
                       "Use one of the hostfile's host names, or leave --hostfile out.");
    }
  }
  prepare_node_run(d, opt, environment, probes,
                   true);  // p.master_addr stays as given, else node 0's from the agreement
  d.agent = agent_options(opt, d.hosts, environment.vars);
  if (slurm_store_here && !*slurm_store_here) d.agent->store_elsewhere = true;  // the first node's
  p.rdzv_backend = d.agent->etcd ? config::RdzvBackend::Etcd : config::RdzvBackend::Mtrain;
  p.rdzv_endpoint = d.agent->endpoint.str();
  return plan_and_check(std::move(d), std::move(opt), environment.vars, probes, true, true);
}

}  // namespace

LaunchDecision decide_launch(LaunchOptions opt, const LaunchEnvironment& environment, LaunchProbes& probes) {
  ModeFacts f;
  f.slurm_task = opt.launcher == config::LauncherKind::SlurmTask;
  if (f.slurm_task) return decide_slurm_task(std::move(opt), environment.vars);
  LaunchDecision d;
  const Gathered g = gather(opt, environment.vars, probes, d);
  f.ssh_agent = opt.multi.ssh_agent;
  f.node_rendezvous = g.node_rendezvous;
  f.slurm_step = g.slurm_step;
  if (d.hosts && !f.ssh_agent && !f.node_rendezvous) f.hostfile = place_on_hostfile(opt, *d.hosts, probes);
  f.nnodes = opt.plan.nnodes;
  f.node_rank_given = opt.multi.node_rank_given;
  d.mode = classify_launch(f);
  switch (d.mode) {
    case LaunchMode::ssh_launcher: return decide_ssh_launcher(std::move(opt), std::move(d), probes);
    case LaunchMode::static_node: return decide_static_node(std::move(d), std::move(opt), environment, probes);
    case LaunchMode::dynamic_node:
    case LaunchMode::ssh_agent:
      return decide_joining_node(std::move(d), std::move(opt), environment, probes, g.slurm_store_here);
    case LaunchMode::local:
    case LaunchMode::slurm_node:
    case LaunchMode::slurm_task: break;
  }
  return decide_plain_node(std::move(d), std::move(opt), environment, probes);
}

}  // namespace mtrain::launch

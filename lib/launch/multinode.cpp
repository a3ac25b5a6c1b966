#include "lib/launch/multinode.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/etcd_client.hpp"
#include "lib/launch/preflight.hpp"
#include "lib/launch/scale_up.hpp"
#include "lib/launch/ssh_runner.hpp"
#include "lib/remote/ssh_command.hpp"
#include "lib/rendezvous/server.hpp"
#include "lib/rendezvous/token.hpp"
#include "lib/topology/gpu_list.hpp"
#include "lib/topology/placement.hpp"

namespace fs = std::filesystem;

namespace mtrain::launch {

namespace {

using rendezvous::Duration;

Duration seconds(double s) { return Duration(static_cast<long long>(s * 1000)); }

bool default_slots(const std::vector<int>& slots) {
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i] != static_cast<int>(i)) return false;
  return true;
}

std::string number(double v) { return fmt::format("{}", v); }

// `--export-env-file`: VAR=VALUE lines; blank lines and '#' comments are skipped.
std::vector<std::string> env_file_exports(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UsageError(fmt::format("{}: cannot read the --export-env-file", path), "Check the path.");
  std::vector<std::string> out;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    std::string t = str::trim(line);
    if (t.empty() || t[0] == '#') continue;
    if (str::starts_with(t, "export ")) t = str::trim(t.substr(7));
    if (t.find('=') == std::string::npos || t[0] == '=')
      throw UsageError(fmt::format("{}:{}:1: '{}' is not VAR=VALUE", path, n, t), "Write one VAR=VALUE per line.");
    out.push_back(t);
  }
  return out;
}

std::vector<std::string> agent_argv(const LaunchOptions& opt, const rendezvous::Endpoint& ep, int k,
                                    const topology::HostSlots& h, int nnodes) {
  const auto& m = opt.multi;
  const auto& p = opt.plan;
  std::vector<std::string> a{m.remote_mtrain.empty() ? m.self_exe : m.remote_mtrain,
                             "launch",
                             "--ssh-agent",
                             "--job-id", p.job_id,
                             "--rdzv-backend", "mtrain",
                             "--rdzv-endpoint", ep.str(),
                             "--nnodes", std::to_string(nnodes),
                             "--node-rank", std::to_string(k),
                             "--node-name", h.host,
                             "--rdzv-timeout", number(m.rdzv_timeout_s),
                             "--node-timeout", number(m.node_timeout_s),
                             "--master-port", std::to_string(p.master_port),
                             "--role", p.role.empty() ? "default" : p.role,
                             "--grace-period", number(opt.grace_period_s),
                             "--nproc-per-node", std::to_string(h.slots.size())};
  if (!default_slots(h.slots)) a.insert(a.end(), {"--gpus", topology::format_gpu_list(h.slots)});
  if (p.device != config::DeviceKind::Auto) a.insert(a.end(), {"--device", config::to_string(p.device)});
  if (!p.rdzv_id.empty()) a.insert(a.end(), {"--rdzv-id", p.rdzv_id});
  if (!p.master_addr.empty()) a.insert(a.end(), {"--master-addr", p.master_addr});
  if (opt.heartbeat_timeout_s > 0) a.insert(a.end(), {"--heartbeat-timeout", number(opt.heartbeat_timeout_s)});
  const auto& o = opt.output;
  if (!o.prefix) a.push_back("--no-prefix");
  else a.insert(a.end(), {"--prefix", o.prefix_format});
  if (!o.ranks_filter.empty()) {
    std::vector<std::string> r;
    for (int x : o.ranks_filter) r.push_back(std::to_string(x));
    a.insert(a.end(), {"--ranks-filter", str::join(r, ",")});
  }
  if (!o.log_dir.empty()) a.insert(a.end(), {"--log-dir", fs::absolute(o.log_dir).string()});
  if (o.tee) a.push_back("--tee");
  if (p.module) a.push_back("-m");
  if (p.no_python) a.push_back("--no-python");
  if (p.python != "python3") a.insert(a.end(), {"--python", p.python});
  if (opt.pass_config != config::PassConfig::None) a.insert(a.end(), {"--pass-config", config::to_string(opt.pass_config)});
  if (p.local_rank_arg) a.push_back("--local-rank-arg");
  // How its ranks leave for a newcomer.
  if (m.scale_up != ScaleUp::checkpoint) a.insert(a.end(), {"--scale-up", config::to_string(m.scale_up)});
  if (p.program.empty()) return a;  // the bundled trainer: the job comes on stdin (MTRAIN_JOB_SPEC)
  a.push_back("--");
  a.insert(a.end(), p.program.begin(), p.program.end());
  return a;
}

}  // namespace

std::vector<plan::ClusterNode> cluster_nodes(const topology::Inventory& hosts) {
  std::vector<plan::ClusterNode> out;
  for (const auto& h : hosts) out.push_back({h.host, h.slots});
  return out;
}

void apply_hostfile_node(plan::PlanOptions& p, const topology::Inventory& hosts, int node_rank) {
  if (node_rank < 0 || node_rank >= static_cast<int>(hosts.size()))
    throw UsageError(
        fmt::format("--node-rank {} is outside the {} hosts the hostfile selects", node_rank, hosts.size()),
        "Number the nodes 0 to N-1 in hostfile order.");
  auto placement = topology::place_ranks(hosts);
  const auto& h = hosts[static_cast<size_t>(node_rank)];
  p.nnodes = static_cast<int>(hosts.size());
  p.node_rank = node_rank;
  p.first_rank = placement.nodes[static_cast<size_t>(node_rank)].first_rank;
  p.world_size = placement.world_size;
  if (p.node_name.empty()) p.node_name = h.host;
  if (p.master_addr.empty()) p.master_addr = hosts[0].host;
  if (!p.nproc_per_node) p.nproc_per_node = config::RankCount::count(static_cast<int>(h.slots.size()));
  if (p.gpus.empty() && !default_slots(h.slots)) p.gpus = topology::format_gpu_list(h.slots);
}

// --rdzv-endpoint HOST without a port listens on / joins launch.rdzv_port (--rdzv-port).
rendezvous::Endpoint endpoint_of(const MultiNodeOptions& m) {
  auto ep = rendezvous::parse_endpoint(m.rdzv_endpoint);
  const std::string& t = m.rdzv_endpoint;
  const bool has_port = t[0] == '[' ? t.find("]:") != std::string::npos : t.find(':') != std::string::npos;
  if (!has_port) ep.port = static_cast<uint16_t>(m.rdzv_port);
  return ep;
}

namespace {

// The store the launcher holds for an ssh job. --nnodes MIN:MAX over the hostfile's hosts
// (decide_launch checked MIN <= hosts <= MAX): with --max-restarts the job re-forms without a lost
// host and takes it back when its new agent joins.
rendezvous::ServerOptions ssh_store_options(const LaunchOptions& opt, const topology::Inventory& hosts,
                                            const rendezvous::Endpoint& ep, const std::string& token) {
  const auto& p = opt.plan;
  const auto& m = opt.multi;
  const int nnodes = static_cast<int>(hosts.size());
  rendezvous::ServerOptions so;
  so.listen = ep;
  const auto range = m.nnodes.empty() ? rendezvous::NodeCount{nnodes, nnodes} : rendezvous::parse_nnodes(m.nnodes);
  so.store.min_nodes = range.elastic() ? range.min : nnodes;
  so.store.max_nodes = range.elastic() ? std::min(range.max, nnodes) : nnodes;
  so.store.scale_up = store_scales_up(m.scale_up, so.store.min_nodes < so.store.max_nodes);
  so.store.join_timeout = seconds(m.rdzv_timeout_s);
  so.store.last_call = seconds(m.rdzv_last_call_s);
  so.store.heartbeat_timeout = seconds(m.node_timeout_s);
  for (const auto& h : hosts) so.store.expected_hosts.push_back(h.host);
  so.store.token = token;
  so.store.master_port = p.master_port;
  so.store.run_id = p.rdzv_id.empty() ? p.job_id : p.rdzv_id;
  so.store.max_restarts = p.max_restarts;  // the job's restarts: a failed rank re-forms every node's ranks
  so.on_progress = [](const std::string& line) {
    std::fprintf(stderr, "mtrain: rendezvous: %s\n", line.c_str());
    std::fflush(stderr);
  };
  return so;
}

// How each host's agent is started over ssh, and what it is given: the forwarded environment, the
// job, the token, and the store's address `ep` (its port once the store listens).
SshRunOptions ssh_run_options(const LaunchOptions& opt, const topology::Inventory& hosts,
                              const rendezvous::Endpoint& ep, const EnvMap& env, const std::string& token) {
  const auto& p = opt.plan;
  const auto& m = opt.multi;
  std::vector<std::string> exports = m.exports;
  if (!m.export_env_file.empty())
    for (auto& e : env_file_exports(m.export_env_file)) exports.push_back(e);

  SshRunOptions r;
  r.job_id = p.job_id;
  r.ssh.program = resolve_program("ssh", env);
  r.ssh.port = m.ssh_port;
  r.ssh.identity_file = m.ssh_identity;
  r.ssh.options = m.ssh_options;
  // MTRAIN_* is forwarded, but not the launcher's own host and GPU selection: an agent would read
  // them as its flags (the selection it needs is on its command line).
  r.env = remote::forwarded_env(env, exports,
                                {rendezvous::kTokenEnv, "MTRAIN_JOB_SPEC", "MTRAIN_HOSTFILE", "MTRAIN_INCLUDE",
                                 "MTRAIN_EXCLUDE", "MTRAIN_GPUS", "MTRAIN_NUM_NODES", "MTRAIN_NUM_GPUS",
                                 "MTRAIN_LAUNCHER", "MTRAIN_DRY_RUN", "MTRAIN_FORMAT", "MTRAIN_NPROC_PER_NODE"});
  std::error_code ec;
  r.workdir = fs::current_path(ec).string();
  r.token = token;
  // The resolved job: for the bundled trainer, and for a program's MTRAIN_JOB_FILE on every host.
  if (!opt.job_spec_json.empty()) r.job_spec = nlohmann::json::parse(opt.job_spec_json).dump();  // one line
  r.grace = std::chrono::milliseconds(static_cast<long>(opt.grace_period_s * 1000));
  r.restarts = p.max_restarts > 0;
  const int nnodes = static_cast<int>(hosts.size());
  for (int k = 0; k < nnodes; ++k) {
    const auto& h = hosts[static_cast<size_t>(k)];
    r.nodes.push_back({h.host, h.user, agent_argv(opt, ep, k, h, nnodes)});
  }
  return r;
}

}  // namespace

int run_ssh_launch(LaunchOptions opt, const topology::Inventory& hosts, const plan::HostFacts& facts,
                   rendezvous::Endpoint ep, const EnvMap& env) {
  auto& p = opt.plan;
  p.rdzv_backend = config::RdzvBackend::Mtrain;
  p.rdzv_endpoint = ep.str();

  // The bundled trainer: each agent runs mtrain-worker on the job that comes on its stdin, with a
  // job file in its own run folder; the launcher's plan shows (and checks) that command.
  if (p.program.empty() && p.worker_argv.empty())
    p.worker_argv = {opt.worker_path.empty() ? std::string("mtrain-worker") : opt.worker_path, "--job",
                     "<the agent's run folder>/job.json"};
  if (opt.dry_run) {
    plan::LaunchPlan lp = plan::build_cluster_plan(p, cluster_nodes(hosts), facts);
    const std::string out = plan::render(lp, opt.format);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  }
  plan::build_cluster_plan(p, cluster_nodes(hosts), facts);  // the same checks as the dry run

  auto tok = env.find(rendezvous::kTokenEnv);
  std::string token = rendezvous::token_or_generate(tok == env.end() ? nullptr : tok->second.c_str());
  rendezvous::Server server(ssh_store_options(opt, hosts, ep, token));
  server.start();
  ep.port = server.port();

  SshRunOptions r = ssh_run_options(opt, hosts, ep, env, token);
  r.job_status = [&server] { return server.status(); };
  r.abort_job = [&server](const std::string& why) { server.abort(why); };
  r.lose_node = [&server](const std::string& host, const std::string& why) { return server.lose_host(host, why); };
  std::fprintf(stderr, "mtrain: job %s: starting agents on %d hosts over ssh (rendezvous %s)\n", p.job_id.c_str(),
               static_cast<int>(hosts.size()), ep.str().c_str());
  PosixProcessRunner runner;
  int rc = run_over_ssh(r, runner);
  server.stop();
  return rc;
}

AgentOptions agent_options(const LaunchOptions& opt, const std::optional<topology::Inventory>& hosts,
                           const EnvMap& env) {
  const auto& m = opt.multi;
  AgentOptions a;
  const bool etcd = m.rdzv_backend == config::RdzvBackend::Etcd;
  if (m.rdzv_endpoint.empty() && etcd)
    throw UsageError("--rdzv-backend etcd needs --rdzv-endpoint with the etcd cluster's members",
                     "Give every node the same list, e.g. --rdzv-endpoint etcd-1:2379,etcd-2:2379,etcd-3:2379.");
  if (m.rdzv_endpoint.empty())
    throw UsageError("--rdzv-backend mtrain needs --rdzv-endpoint HOST[:PORT]: the node that holds the store",
                     "Give every node the same endpoint, e.g. --rdzv-endpoint node-0:29400.");
  if (etcd) {
    a.etcd = true;
    a.etcd_client = etcd_client_options(m, env);
    a.etcd_api = m.rdzv_etcd_api;
    a.endpoint = a.etcd_client.endpoints.front();
  } else {
    a.endpoint = endpoint_of(m);
  }
  a.nnodes = rendezvous::parse_nnodes(m.nnodes.empty() ? std::to_string(hosts ? hosts->size() : 1) : m.nnodes);
  a.node_name = m.node_name;
  auto tok = env.find(rendezvous::kTokenEnv);
  if (tok == env.end() || tok->second.empty())
    throw UsageError(fmt::format("--rdzv-backend {} needs the job token in {} on every node", etcd ? "etcd" : "mtrain",
                                 rendezvous::kTokenEnv),
                     fmt::format("Set the same value on every node, e.g. `export {}={}` (any 16+ random characters); "
                                 "the store refuses nodes without it.",
                                 rendezvous::kTokenEnv, rendezvous::generate_token()));
  a.token = rendezvous::token_or_generate(tok->second.c_str());
  a.join_timeout = seconds(m.rdzv_timeout_s);
  a.last_call = seconds(m.rdzv_last_call_s);
  a.node_timeout = seconds(m.node_timeout_s);
  a.max_restarts = opt.plan.max_restarts;
  a.scale_up = m.scale_up;
  if (hosts)
    for (const auto& h : *hosts) a.expected_hosts.push_back(h.host);
  a.store_elsewhere = m.ssh_agent;
  a.watch_stdin = m.ssh_agent;
  a.quiet_progress = m.ssh_agent;  // the launcher prints the store's progress itself
  a.expected_node_rank = m.ssh_agent && m.node_rank_given ? opt.plan.node_rank : -1;
  a.record_dir = remote::agent_record_dir(opt.plan.job_id, env);
  return a;
}

std::string static_node_name(const plan::PlanOptions& p) {
  return p.node_name.empty() ? fmt::format("node-{}", p.node_rank) : p.node_name;
}

AgentOptions static_agent_options(const LaunchOptions& opt, const plan::PlanOptions& p,
                                  const std::optional<topology::Inventory>& hosts, const EnvMap& env,
                                  std::string* token_note) {
  const auto& m = opt.multi;
  AgentOptions a;
  if (!m.rdzv_endpoint.empty()) {
    a.endpoint = endpoint_of(m);
  } else {
    a.endpoint.host = p.master_addr.empty() ? "127.0.0.1" : p.master_addr;
    a.endpoint.port = static_cast<uint16_t>(m.rdzv_port);
  }
  a.nnodes = rendezvous::NodeCount{p.nnodes, p.nnodes};
  a.node_name = static_node_name(p);
  if (hosts) {
    for (const auto& h : *hosts) a.expected_hosts.push_back(h.host);
  } else {
    for (int k = 0; k < p.nnodes; ++k) a.expected_hosts.push_back(fmt::format("node-{}", k));
  }
  auto tok = env.find(rendezvous::kTokenEnv);
  if (tok != env.end() && !tok->second.empty()) {
    a.token = rendezvous::token_or_generate(tok->second.c_str());
  } else {
    // Not a secret: every node computes the same text from what they were all given.
    a.token = "mtrain-static-rendezvous:" + a.endpoint.str() + (p.rdzv_id.empty() ? "" : ":" + p.rdzv_id);
    if (token_note)
      *token_note = fmt::format("{} is unset: the restarts' rendezvous store on {} accepts any peer that reaches it "
                                "(as torchrun's static store does); export the same 16+ random characters on every "
                                "node to authenticate it",
                                rendezvous::kTokenEnv, a.endpoint.str());
  }
  a.join_timeout = seconds(m.rdzv_timeout_s);
  a.last_call = seconds(m.rdzv_last_call_s);
  a.node_timeout = seconds(m.node_timeout_s);
  a.max_restarts = p.max_restarts;
  a.scale_up = ScaleUp::off;  // N fixed: no node can arrive beyond it
  a.store_elsewhere = p.node_rank != 0;
  a.expected_node_rank = p.node_rank;
  a.record_dir = remote::agent_record_dir(p.job_id, env);
  return a;
}

}  // namespace mtrain::launch

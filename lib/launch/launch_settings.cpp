#include "lib/launch/launch_settings.hpp"

#include <fmt/format.h>

#include "lib/config/master_port.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/core/error.hpp"
#include "lib/core/index_list.hpp"

namespace mtrain::launch {

namespace {

using json = config::json;
using Set = std::function<void(LaunchOptions&, const json&, bool)>;

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A text field.
template <class Field>
Set text(Field field) {
  return [field](LaunchOptions& o, const json& v, bool) { field(o) = text_of(v); };
}
// A field whose empty value means "derive it" (from the hostfile's slots or node count): the
// registry's default is what that derivation gives on one plain machine, so only a given value
// is written.
template <class Field>
Set text_when_given(Field field) {
  return [field](LaunchOptions& o, const json& v, bool given) { field(o) = given ? text_of(v) : std::string(); };
}
// launch.nproc_per_node, typed once (config/rank_count.hpp); absent unless given, since a
// hostfile's slots or a node's line derive it.
Set rank_count_when_given() {
  return [](LaunchOptions& o, const json& v, bool given) {
    o.plan.nproc_per_node.reset();
    if (given) o.plan.nproc_per_node = config::rank_count_from_text(text_of(v), "launch.nproc_per_node");
  };
}
// A choice setting's field, as its enum (lib/config/launch_choices.hpp). The registry has checked
// the name; `key` is the binding's own, for the error of a value that bypassed it.
template <class E, class Field>
Set choice(const char* key, Field field) {
  return [key, field](LaunchOptions& o, const json& v, bool) { field(o) = config::choice_from_text<E>(text_of(v), key); };
}
// A field of the setting's own type (a number, bool, a list of text).
template <class T, class Field>
Set value(Field field) {
  return [field](LaunchOptions& o, const json& v, bool) { field(o) = v.get<T>(); };
}
// --num-nodes / --num-gpus: 0 (the default) takes every host or slot, which the hostfile
// selection spells -1 as DeepSpeed does.
template <class Field>
Set count_or_all(Field field) {
  return [field](LaunchOptions& o, const json& v, bool) {
    const int n = v.get<int>();
    field(o) = n == 0 ? -1 : n;
  };
}

using O = LaunchOptions;

// Where the ranks run: launcher, ranks per node, devices, hosts and the master address.
std::vector<LaunchBinding> placement_bindings() {
  return {
      {"launch.launcher", choice<config::LauncherKind>(
                              "launch.launcher", [](O & o) -> auto& { return o.launcher; })},
      {"launch.nproc_per_node", rank_count_when_given()},
      {"launch.nnodes", text_when_given([](O& o) -> std::string& { return o.multi.nnodes; })},
      {"launch.device", choice<config::DeviceKind>(
                            "launch.device", [](O & o) -> auto& { return o.plan.device; })},
      {"launch.gpus", text([](O& o) -> std::string& { return o.plan.gpus; })},
      {"launch.include", text([](O& o) -> std::string& { return o.plan.include; })},
      {"launch.exclude", text([](O& o) -> std::string& { return o.plan.exclude; })},
      {"launch.hostfile", text([](O& o) -> std::string& { return o.multi.hostfile; })},
      {"launch.master_addr", text([](O& o) -> std::string& { return o.plan.master_addr; })},
      {"launch.master_port",
       [](O& o, const json& v, bool given) {
         o.master_port = config::master_port_from_text(text_of(v), "launch.master_port");
         o.master_port_given = given;  // else a Slurm allocation's port may take its place
       }},
  };
}

// How the nodes meet and stay together: rendezvous, node identity, timeouts, ssh.
std::vector<LaunchBinding> rendezvous_bindings() {
  return {
      {"launch.rdzv_backend", choice<config::RdzvBackend>(
                                  "launch.rdzv_backend", [](O & o) -> auto& { return o.multi.rdzv_backend; })},
      {"launch.rdzv_port", value<int>([](O& o) -> int& { return o.multi.rdzv_port; })},
      {"launch.rdzv_endpoint", text([](O& o) -> std::string& { return o.multi.rdzv_endpoint; })},
      {"launch.rdzv_id", text([](O& o) -> std::string& { return o.plan.rdzv_id; })},
      {"launch.rdzv_etcd_api", choice<config::EtcdApi>(
                                   "launch.rdzv_etcd_api", [](O & o) -> auto& { return o.multi.rdzv_etcd_api; })},
      {"launch.rdzv_etcd_cacert", text([](O& o) -> std::string& { return o.multi.rdzv_etcd_cacert; })},
      {"launch.rdzv_etcd_cert", text([](O& o) -> std::string& { return o.multi.rdzv_etcd_cert; })},
      {"launch.rdzv_etcd_key", text([](O& o) -> std::string& { return o.multi.rdzv_etcd_key; })},
      {"launch.rdzv_etcd_user", text([](O& o) -> std::string& { return o.multi.rdzv_etcd_user; })},
      {"launch.rdzv_etcd_password_file", text([](O& o) -> std::string& { return o.multi.rdzv_etcd_password_file; })},
      {"launch.job_id", text([](O& o) -> std::string& { return o.plan.job_id; })},
      {"launch.role", text([](O& o) -> std::string& { return o.plan.role; })},
      {"launch.node_rank",
       [](O& o, const json& v, bool given) {
         o.plan.node_rank = v.get<int>();
         o.multi.node_rank_given = given;  // from any source: this node is static node K (launch_decision.cpp)
       }},
      {"launch.node_name", text([](O& o) -> std::string& { return o.multi.node_name; })},
      {"launch.scale_up", choice<config::ScaleUp>(
                              "launch.scale_up", [](O & o) -> auto& { return o.multi.scale_up; })},
      {"launch.rdzv_timeout_s", value<double>([](O& o) -> double& { return o.multi.rdzv_timeout_s; })},
      {"launch.rdzv_last_call_s", value<double>([](O& o) -> double& { return o.multi.rdzv_last_call_s; })},
      {"launch.node_timeout_s", value<double>([](O& o) -> double& { return o.multi.node_timeout_s; })},
      {"launch.heartbeat_timeout_s", value<double>([](O& o) -> double& { return o.heartbeat_timeout_s; })},
      {"launch.grace_period_s", value<double>([](O& o) -> double& { return o.grace_period_s; })},
      {"launch.num_nodes", count_or_all([](O& o) -> int& { return o.multi.num_nodes; })},
      {"launch.num_gpus", count_or_all([](O& o) -> int& { return o.multi.num_gpus; })},
      {"launch.remote_mtrain", text([](O& o) -> std::string& { return o.multi.remote_mtrain; })},
      {"launch.ssh_identity", text([](O& o) -> std::string& { return o.multi.ssh_identity; })},
      {"launch.ssh_option",
       value<std::vector<std::string>>([](O& o) -> std::vector<std::string>& { return o.multi.ssh_options; })},
      {"launch.ssh_port", value<int>([](O& o) -> int& { return o.multi.ssh_port; })},
      {"launch.export",
       value<std::vector<std::string>>([](O& o) -> std::vector<std::string>& { return o.multi.exports; })},
      {"launch.export_env_file", text([](O& o) -> std::string& { return o.multi.export_env_file; })},
  };
}

// What the ranks print and where.
std::vector<LaunchBinding> output_bindings() {
  return {
    {"launch.tee", value<bool>([](O& o) -> bool& { return o.output.tee; })},
    {"launch.prefix", text([](O& o) -> std::string& { return o.output.prefix_format; })},
    {"launch.no_prefix", [](O& o, const json& v, bool) { o.output.prefix = !v.get<bool>(); }},
    {"launch.ranks_filter",
     [](O& o, const json& v, bool) {
       // The registry checked the text with the same grammar (core/index_list.hpp); "" or all:
       // every rank.
       o.output.ranks_filter.clear();
       for (int r : parse_index_selection(text_of(v), "--ranks-filter", "rank")) o.output.ranks_filter.insert(r);
     }},
  };
}

// How the program is started and restarted, and what the launcher itself does.
std::vector<LaunchBinding> program_bindings() {
  return {
    {"launch.python", text([](O& o) -> std::string& { return o.plan.python; })},
    {"launch.module", value<bool>([](O& o) -> bool& { return o.plan.module; })},
    {"launch.no_python", value<bool>([](O& o) -> bool& { return o.plan.no_python; })},
    {"launch.local_rank_arg", value<bool>([](O& o) -> bool& { return o.plan.local_rank_arg; })},
    // After launch.local_rank_arg (apply_launch_settings goes in this order): --no-local-rank,
    // torchrun's default, wins over --local-rank-arg whichever source gave either.
    {"launch.no_local_rank", [](O& o, const json& v, bool) {
       if (v.get<bool>()) o.plan.local_rank_arg = false;
     }},
    {"launch.max_restarts", value<int>([](O& o) -> int& { return o.plan.max_restarts; })},
    {"launch.pass_config", choice<config::PassConfig>("launch.pass_config", [](O& o) -> auto& { return o.pass_config; })},
    {"launch.log_dir", text([](O& o) -> std::string& { return o.output.log_dir; })},
    {"launch.raw_output", value<bool>([](O& o) -> bool& { return o.output.raw_output; })},
    {"launch.dry_run", value<bool>([](O& o) -> bool& { return o.dry_run; })},
    {"launch.format", choice<config::PlanFormat>("launch.format", [](O& o) -> auto& { return o.format; })},
    {"launch.device_memory", text([](O& o) -> std::string& { return o.device_memory; })},
    {"launch.force", value<bool>([](O& o) -> bool& { return o.force; })},
  };
}

}  // namespace

const std::vector<LaunchBinding>& launch_bindings() {
  static const std::vector<LaunchBinding> t = [] {
    std::vector<LaunchBinding> all;
    for (auto part : {placement_bindings, rendezvous_bindings, output_bindings, program_bindings})
      for (auto& b : part()) all.push_back(std::move(b));
    return all;
  }();
  return t;
}

void apply_launch_settings(const config::Resolved& r, LaunchOptions& o) {
  for (const auto& b : launch_bindings()) {
    auto src = r.provenance.find(b.key);
    const bool given = src != r.provenance.end() && src->second.first != config::Source::Default;
    b.set(o, config::get(r.job, b.key), given);
  }
}

}  // namespace mtrain::launch

#include "mtrain/launch/launch_settings.hpp"

#include <fmt/format.h>

#include "mtrain/core/error.hpp"

namespace mtrain::launch {

namespace {

using json = config::json;
using Set = std::function<void(LaunchOptions&, const json&, bool)>;

std::string text_of(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A text field: master_port "29500", "0" or "auto" all stay text for run_launch to resolve.
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

}  // namespace

const std::vector<LaunchBinding>& launch_bindings() {
  using O = LaunchOptions;
  static const std::vector<LaunchBinding> t = {
      {"launch.launcher", text([](O& o) -> std::string& { return o.launcher; })},
      {"launch.nproc_per_node", text_when_given([](O& o) -> std::string& { return o.plan.nproc_per_node; })},
      {"launch.nnodes", text_when_given([](O& o) -> std::string& { return o.multi.nnodes; })},
      {"launch.device", text([](O& o) -> std::string& { return o.plan.device; })},
      {"launch.gpus", text([](O& o) -> std::string& { return o.plan.gpus; })},
      {"launch.include", text([](O& o) -> std::string& { return o.plan.include; })},
      {"launch.exclude", text([](O& o) -> std::string& { return o.plan.exclude; })},
      {"launch.hostfile", text([](O& o) -> std::string& { return o.multi.hostfile; })},
      {"launch.master_addr", text([](O& o) -> std::string& { return o.plan.master_addr; })},
      {"launch.master_port",
       [](O& o, const json& v, bool given) {
         o.master_port = text_of(v);
         o.master_port_given = given;  // else a Slurm allocation's port may take its place
       }},
      {"launch.rdzv_backend", text([](O& o) -> std::string& { return o.multi.rdzv_backend; })},
      {"launch.rdzv_port", [](O& o, const json& v, bool) { o.multi.rdzv_port = v.get<int>(); }},
      {"launch.scale_up", text([](O& o) -> std::string& { return o.multi.scale_up; })},
      {"launch.rdzv_timeout_s", [](O& o, const json& v, bool) { o.multi.rdzv_timeout_s = v.get<double>(); }},
      {"launch.rdzv_last_call_s", [](O& o, const json& v, bool) { o.multi.rdzv_last_call_s = v.get<double>(); }},
      {"launch.node_timeout_s", [](O& o, const json& v, bool) { o.multi.node_timeout_s = v.get<double>(); }},
      {"launch.heartbeat_timeout_s", [](O& o, const json& v, bool) { o.heartbeat_timeout_s = v.get<double>(); }},
      {"launch.grace_period_s", [](O& o, const json& v, bool) { o.grace_period_s = v.get<double>(); }},
      {"launch.remote_mtrain", text([](O& o) -> std::string& { return o.multi.remote_mtrain; })},
      {"launch.ssh_identity", text([](O& o) -> std::string& { return o.multi.ssh_identity; })},
      {"launch.export_env_file", text([](O& o) -> std::string& { return o.multi.export_env_file; })},
      {"launch.tee", [](O& o, const json& v, bool) { o.output.tee = v.get<bool>(); }},
      {"launch.prefix", text([](O& o) -> std::string& { return o.output.prefix_format; })},
      {"launch.python", text([](O& o) -> std::string& { return o.plan.python; })},
      {"launch.local_rank_arg", [](O& o, const json& v, bool) { o.plan.local_rank_arg = v.get<bool>(); }},
      {"launch.max_restarts", [](O& o, const json& v, bool) { o.plan.max_restarts = v.get<int>(); }},
      {"launch.pass_config", text([](O& o) -> std::string& { return o.pass_config; })},
      {"launch.log_dir", text([](O& o) -> std::string& { return o.output.log_dir; })},
      {"launch.raw_output", [](O& o, const json& v, bool) { o.output.raw_output = v.get<bool>(); }},
  };
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

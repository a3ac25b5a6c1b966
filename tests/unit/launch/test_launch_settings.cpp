// Every launch.* and slurm.* setting of the registry, from every source a user has — its CLI flag
// (parsed by the same generated CLI11 options `mtrain launch` / `mtrain slurm script` have), the
// job file, its MTRAIN_* variable and --set — reaches the same field of the options the launch and
// Slurm libraries receive (LaunchOptions via apply_launch_settings, slurm::JobOptions via
// job_options_from), and a bad value is refused by each source with the same registry check.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <fstream>

#include <catch2/catch.hpp>

#include "lib/config/cli_flags.hpp"
#include "lib/config/render.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/error.hpp"
#include "lib/launch/launch_settings.hpp"
#include "lib/slurm/job_options.hpp"
#include "temp_dir.hpp"

using namespace mtrain;
using config::json;

namespace {

using mtrain::testing::TempDir;

// Text settings with a format: one value that passes and one that does not.
const std::map<std::string, std::pair<std::string, std::string>> kTextSamples = {
    {"launch.nproc_per_node", {"3", "three"}},
    {"launch.nnodes", {"2:4", "4:2"}},
    {"launch.gpus", {"0-1", "1-0"}},
    {"launch.ranks_filter", {"0,3", "zero"}},
    {"launch.device_memory", {"80GiB", "lots"}},
    {"slurm.mem", {"64G", "lots"}},
    {"slurm.time", {"1-12:00:00", "soon"}},
    {"slurm.signal", {"TERM@30", "@@"}},
};

// A value other than the default, as text, and one the setting refuses ("" when any text goes).
std::pair<std::string, std::string> samples(const config::Setting& s) {
  if (auto it = kTextSamples.find(s.key); it != kTextSamples.end()) return it->second;
  switch (s.type) {
    case config::Type::Bool: return {s.default_value.get<bool>() ? "false" : "true", "maybe"};
    case config::Type::Int: {
      long long v = s.min ? static_cast<long long>(*s.min) + 2 : 2;
      if (s.default_value.is_number() && v == s.default_value.get<long long>()) ++v;
      return {std::to_string(v), std::to_string(static_cast<long long>(s.max.value_or(1e9)) + 1)};
    }
    case config::Type::Float: return {"7.5", std::to_string(s.max.value_or(1e9) * 2)};
    case config::Type::Choice:
      for (const auto& c : s.choices)
        if (json(c) != s.default_value) return {c, "bogus"};
      break;
    case config::Type::String:
      // slurm.* text is one line; launch.* text (hosts, paths) takes anything, and so does a list
      // (one item per line from a flag or variable).
      return {"sample-value", s.scope == config::Scope::Slurm && !s.list ? "two\nlines" : ""};
  }
  FAIL("no sample for " << s.key);
  return {};
}

// The CLI words that give `text` to a setting's flag.
std::vector<std::string> flag_words(const config::Setting& s, const std::string& text) {
  const std::string flag = "--" + config::cli_flag(s);
  if (s.type == config::Type::Bool) return {text == "true" ? flag : flag + "=" + text};
  return {flag, text};
}

// The job file line for one setting: "section:\n  name: VALUE" (VALUE as YAML).
std::string yaml_for(const config::Setting& s, const std::string& text) {
  json v;
  if (s.list) v = json::array({text});
  else if (s.type == config::Type::String || s.type == config::Type::Choice) v = text;
  else v = json::parse(text, nullptr, false).is_discarded() ? json(text) : json::parse(text);
  const std::string name = s.key.substr(s.key.find('.') + 1);
  return config::section_of(s.key) + ":\n  " + name + ": " + (v.is_string() ? json(text).dump() : v.dump()) + "\n";
}

// launch.nproc_per_node as the plan holds it: "" when not given (the hostfile or node derives it).
std::string nproc_text(const plan::PlanOptions& p) {
  return p.nproc_per_node ? config::to_string(*p.nproc_per_node) : std::string();
}

// What the options the libraries receive hold: every field a launch.* or slurm.* setting sets.
json observe(const launch::LaunchOptions& o) {
  using config::to_string;
  return {{"launcher", to_string(o.launcher)},
          {"nproc", nproc_text(o.plan)},
          {"nnodes", o.multi.nnodes},
          {"device", to_string(o.plan.device)},
          {"gpus", o.plan.gpus},
          {"include", o.plan.include},
          {"exclude", o.plan.exclude},
          {"hostfile", o.multi.hostfile},
          {"master_addr", o.plan.master_addr},
          {"master_port", config::to_string(o.master_port)},
          {"port_given", o.master_port_given},
          {"rdzv_backend", to_string(o.multi.rdzv_backend)},
          {"rdzv_port", o.multi.rdzv_port},
          {"rdzv_timeout", o.multi.rdzv_timeout_s},
          {"scale_up", to_string(o.multi.scale_up)},
          {"max_restarts", o.plan.max_restarts},
          {"pass_config", to_string(o.pass_config)},
          {"log_dir", o.output.log_dir},
          {"raw", o.output.raw_output},
          {"rdzv_last_call", o.multi.rdzv_last_call_s},
          {"node_timeout", o.multi.node_timeout_s},
          {"heartbeat_timeout", o.heartbeat_timeout_s},
          {"grace_period", o.grace_period_s},
          {"remote_mtrain", o.multi.remote_mtrain},
          {"ssh_identity", o.multi.ssh_identity},
          {"export_env_file", o.multi.export_env_file},
          {"tee", o.output.tee},
          {"prefix", o.output.prefix_format},
          {"python", o.plan.python},
          {"local_rank_arg", o.plan.local_rank_arg},
          {"rdzv_endpoint", o.multi.rdzv_endpoint},
          {"rdzv_id", o.plan.rdzv_id},
          {"job_id", o.plan.job_id},
          {"rdzv_etcd_api", to_string(o.multi.rdzv_etcd_api)},
          {"rdzv_etcd_cacert", o.multi.rdzv_etcd_cacert},
          {"rdzv_etcd_cert", o.multi.rdzv_etcd_cert},
          {"rdzv_etcd_key", o.multi.rdzv_etcd_key},
          {"rdzv_etcd_user", o.multi.rdzv_etcd_user},
          {"rdzv_etcd_password_file", o.multi.rdzv_etcd_password_file},
          {"role", o.plan.role},
          {"node_rank", o.plan.node_rank},
          {"node_rank_given", o.multi.node_rank_given},
          {"node_name", o.multi.node_name},
          {"num_nodes", o.multi.num_nodes},
          {"num_gpus", o.multi.num_gpus},
          {"ssh_options", o.multi.ssh_options},
          {"ssh_port", o.multi.ssh_port},
          {"exports", o.multi.exports},
          {"prefix_on", o.output.prefix},
          {"ranks_filter", o.output.ranks_filter},
          {"module", o.plan.module},
          {"no_python", o.plan.no_python},
          {"dry_run", o.dry_run},
          {"format", to_string(o.format)},
          {"device_memory", o.device_memory},
          {"force", o.force}};
}
// Every field of PlanOptions, launch settings or not (the plan's defaults are the launch's).
json observe(const plan::PlanOptions& p) {
  using config::to_string;
  return {{"nproc", nproc_text(p)},
          {"gpus", p.gpus},
          {"device", to_string(p.device)},
          {"include", p.include},
          {"exclude", p.exclude},
          {"master_addr", p.master_addr},
          {"nnodes", p.nnodes},
          {"node_rank", p.node_rank},
          {"master_port", p.master_port},
          {"job_id", p.job_id},
          {"rdzv_id", p.rdzv_id},
          {"role", p.role},
          {"max_restarts", p.max_restarts},
          {"program", p.program},
          {"module", p.module},
          {"python", p.python},
          {"no_python", p.no_python},
          {"extra_args", p.extra_args},
          {"extra_env", p.extra_env},
          {"local_rank_arg", p.local_rank_arg},
          {"worker_argv", p.worker_argv},
          {"error_file_dir", p.error_file_dir},
          {"first_rank", p.first_rank},
          {"world_size", p.world_size},
          {"node_name", p.node_name},
          {"rdzv_backend", to_string(p.rdzv_backend)},
          {"rdzv_endpoint", p.rdzv_endpoint},
          {"heartbeat_file", p.heartbeat_file}};
}
json observe(const slurm::JobOptions& j) {
  return {{"job_name", j.job_name}, {"partition", j.partition}, {"account", j.account}, {"qos", j.qos},
          {"constraint", j.constraint}, {"nodes", j.nodes}, {"ntasks", j.ntasks_per_node},
          {"gpus", j.gpus_per_node}, {"gres", j.gres}, {"cpus", j.cpus_per_task}, {"mem", j.mem},
          {"time", j.time}, {"exclusive", j.exclusive}, {"output", j.output}, {"error", j.error},
          {"exports", j.exports}, {"sbatch", j.sbatch_lines}, {"setup", j.setup}, {"signal", j.signal},
          {"requeue", j.requeue}, {"pattern", config::to_string(j.pattern)}, {"template", j.template_file},
          {"mtrain", j.mtrain}, {"chdir", j.chdir}};
}

// Resolve like `mtrain launch` / `mtrain slurm script` do and observe what the library gets.
json effect(const config::Setting& s, const config::JobInputs& in) {
  const config::Resolved r = config::resolve_job(config::job_registry(), in);
  if (s.scope == config::Scope::Slurm) return observe(slurm::job_options_from(r.job));
  launch::LaunchOptions o;
  launch::apply_launch_settings(r, o);
  return observe(o);
}

struct Source {
  std::string name;
  config::JobInputs in;
  bool takes = true;  // false: a job file or --set naming a setting of one run (Setting::per_invocation)
};

// What a setting shows only on top of another: --no-local-rank turns --local-rank-arg off.
std::vector<std::string> companions(const config::Setting& s) {
  if (s.key == "launch.no_local_rank") return {"launch.local_rank_arg=true"};
  return {};
}

// Nothing given yet: no user file, an empty environment.
config::JobInputs nothing_given(const TempDir& d) {
  config::JobInputs in;
  in.user_file = d.str() + "/none.yaml";
  return in;
}

// Nothing given but the setting's companions.
config::JobInputs baseline(const config::Setting& s, const TempDir& d) {
  config::JobInputs in = nothing_given(d);
  in.sets = companions(s);
  return in;
}

// The flags of one scope, as `mtrain launch` (Launch) and `mtrain slurm script` (Slurm) generate them.
void add_flags(CLI::App& app, config::Scope scope, std::map<std::string, std::string>& out) {
  config::add_setting_flags(app, config::job_registry(), out, {scope});
  config::add_setting_flags(app, config::job_registry(), out, {scope}, {}, config::FlagKind::PerInvocation);
}

// The four ways a user gives `text` to setting `s` (no user file, nothing else in the environment).
std::vector<Source> sources(const config::Setting& s, const std::string& text, const TempDir& d) {
  std::vector<Source> out(4, Source{"", baseline(s, d)});
  out[0].name = "flag " + config::cli_flag(s);
  {
    CLI::App app;
    add_flags(app, s.scope, out[0].in.flags);
    auto words = flag_words(s, text);
    std::reverse(words.begin(), words.end());
    app.parse(words);
  }
  out[1].name = "job file";
  out[1].in.job_file = d.write("job.yaml", yaml_for(s, text));
  out[2].name = "environment " + s.env;
  out[2].in.env = {{s.env, text}};
  out[3].name = "--set";
  out[3].in.sets.push_back(s.key + "=" + text);
  out[1].takes = out[3].takes = !s.per_invocation;
  return out;
}

std::vector<const config::Setting*> launch_and_slurm_settings() {
  std::vector<const config::Setting*> out;
  for (const auto& s : config::job_registry().all())
    if (s.scope != config::Scope::Job) out.push_back(&s);
  return out;
}

}  // namespace

TEST_CASE("every launch.* setting is bound to a LaunchOptions field, every slurm.* to a JobOptions field",
          "[launch][settings]") {
  std::set<std::string> registry, bound;
  for (const auto* s : launch_and_slurm_settings())
    if (s->scope == config::Scope::Launch) registry.insert(s->key);
  for (const auto& b : launch::launch_bindings()) bound.insert(b.key);
  CHECK(registry == bound);
  CHECK(slurm::unbound_settings().empty());
  // The Slurm table `mtrain slurm` offers is the registry's.
  size_t slurm_settings = 0;
  for (const auto* s : launch_and_slurm_settings()) slurm_settings += s->scope == config::Scope::Slurm;
  CHECK(slurm::job_settings().size() == slurm_settings);
}

TEST_CASE("every launch and Slurm setting takes effect from its flag, the job file, MTRAIN_* and --set",
          "[launch][settings]") {
  TempDir d;
  for (const auto* s : launch_and_slurm_settings()) {
    const auto [good, bad] = samples(*s);
    INFO("setting " << s->key << " = " << good);
    const json before = effect(*s, baseline(*s, d));
    std::optional<json> first;
    for (const auto& src : sources(*s, good, d)) {
      INFO("from " << src.name);
      if (!src.takes) {  // a setting of one node or run: the flag or the variable, never the job's file
        CHECK_THROWS_WITH(effect(*s, src.in), Catch::Contains("setting '" + s->key + "' cannot come from") &&
                                                  Catch::Contains("--" + config::cli_flag(*s)) &&
                                                  Catch::Contains(s->env));
        continue;
      }
      const json after = effect(*s, src.in);
      CHECK(after != before);  // it reached the options
      if (!first) first = after;
      CHECK(after == *first);  // and the same field, the same way, from every source
    }
  }
}

TEST_CASE("a bad launch or Slurm value is refused by every source with the registry's check",
          "[launch][settings]") {
  TempDir d;
  for (const auto* s : launch_and_slurm_settings()) {
    const auto [good, bad] = samples(*s);
    if (bad.empty()) continue;  // any text is a host, path or address
    INFO("setting " << s->key << " = " << bad);
    const std::vector<Source> srcs = sources(*s, bad, d);
    for (const auto& src : srcs) {
      INFO("from " << src.name);
      if (!src.takes) continue;  // refused whatever the value (the test above)
      try {
        effect(*s, src.in);
        FAIL("accepted");
      } catch (const Error& e) {
        const std::string what = e.paragraph();
        CHECK_THAT(what, Catch::Contains("setting '" + s->key + "' got"));
        CHECK_THAT(what, Catch::Contains("It takes " + config::describe_type(*s)));
      }
    }
  }
}

TEST_CASE("LaunchOptions' defaults are the registry's: a job that gives nothing changes no field",
          "[launch][settings]") {
  // As TrainJob's (tests/unit/trainer/loop/test_train_job.cpp): a struct default that drifts from
  // its setting's default would make a library caller's launch differ from `mtrain launch`'s.
  TempDir d;
  launch::LaunchOptions from_registry;
  launch::apply_launch_settings(config::resolve_job(config::job_registry(), nothing_given(d)), from_registry);
  CHECK(observe(from_registry) == observe(launch::LaunchOptions{}));
  CHECK(observe(from_registry.plan) == observe(plan::PlanOptions{}));
}

TEST_CASE("PlanOptions' defaults are the registry's for every launch setting it holds", "[launch][settings]") {
  const plan::PlanOptions p;
  const auto def = [](const char* key) { return config::job_registry().require(key).default_value; };
  CHECK(p.device == config::choice_from_text<config::DeviceKind>(def("launch.device").get<std::string>(), "launch.device"));
  CHECK(p.rdzv_backend ==
        config::choice_from_text<config::RdzvBackend>(def("launch.rdzv_backend").get<std::string>(), "launch.rdzv_backend"));
  CHECK(json(p.master_port) == def("launch.master_port"));
  CHECK(json(std::to_string(p.nnodes)) == def("launch.nnodes"));
  CHECK(json(p.node_rank) == def("launch.node_rank"));
  CHECK(json(p.role) == def("launch.role"));
  CHECK(json(p.max_restarts) == def("launch.max_restarts"));
  CHECK(json(p.python) == def("launch.python"));
  CHECK(json(p.module) == def("launch.module"));
  CHECK(json(p.no_python) == def("launch.no_python"));
  CHECK(json(p.local_rank_arg) == def("launch.local_rank_arg"));
  CHECK(json(p.gpus) == def("launch.gpus"));
  CHECK(json(p.include) == def("launch.include"));
  CHECK(json(p.exclude) == def("launch.exclude"));
  CHECK(json(p.master_addr) == def("launch.master_addr"));
  CHECK(json(p.job_id) == def("launch.job_id"));
  CHECK(json(p.rdzv_id) == def("launch.rdzv_id"));
  CHECK(json(p.node_name) == def("launch.node_name"));
}

TEST_CASE("launch.launcher and launch.rdzv_port from a job file reach mtrain launch", "[launch][settings]") {
  // Drift (a): both were registry settings that `mtrain launch` never read from a job file.
  TempDir d;
  config::JobInputs in;
  in.user_file = d.str() + "/none.yaml";
  in.job_file = d.write("job.yaml", "launch:\n  launcher: ssh\n  hostfile: hosts\n  rdzv_port: 31234\n");
  launch::LaunchOptions o;
  launch::apply_launch_settings(config::resolve_job(config::job_registry(), in), o);
  CHECK(o.launcher == config::LauncherKind::Ssh);
  CHECK(o.multi.rdzv_port == 31234);
  CHECK(o.multi.hostfile == "hosts");
}

TEST_CASE("master_port: one rule, 0 and auto pick a free port from every source", "[launch][settings]") {
  // Drift (b): --master-port 0 passed `mtrain launch` but not `config show`.
  TempDir d;
  const auto& s = *config::job_registry().find("launch.master_port");
  for (const std::string v : {"0", "auto", "29501"})
    for (const auto& src : sources(s, v, d)) {
      INFO(src.name << " " << v);
      launch::LaunchOptions o;
      launch::apply_launch_settings(config::resolve_job(config::job_registry(), src.in), o);
      CHECK(o.master_port == config::master_port_from_text(v, "test"));
      CHECK(o.master_port.pick_free == (v != "29501"));
      CHECK(o.master_port_given);
    }
  launch::LaunchOptions o;
  config::JobInputs none;
  none.user_file = d.str() + "/none.yaml";
  launch::apply_launch_settings(config::resolve_job(config::job_registry(), none), o);
  CHECK(o.master_port == config::MasterPort::port(29500));
  CHECK_FALSE(o.master_port_given);  // a Slurm allocation's port may take its place
}

TEST_CASE("a job file with every Slurm key is a valid job for mtrain launch --config", "[launch][settings]") {
  // Drift (c): the sbatch script hands the file with its slurm: section to `mtrain launch
  // --config`, which knew only some of the keys `mtrain slurm` takes.
  TempDir d;
  std::string yaml = "slurm:\n";
  for (const auto& info : slurm::job_settings()) {
    const auto& s = *config::job_registry().find("slurm." + [k = info.key]() mutable {
      std::replace(k.begin(), k.end(), '-', '_');
      return k;
    }());
    yaml += yaml_for(s, samples(s).first).substr(std::string("slurm:\n").size());
  }
  config::JobInputs in;
  in.user_file = d.str() + "/none.yaml";
  in.job_file = d.write("job.yaml", yaml);
  INFO(yaml);
  const auto r = config::resolve_job(config::job_registry(), in);
  // Each key of the file reached the resolved job, and from it the Slurm job's options.
  for (const auto& s : config::job_registry().all()) {
    if (s.scope != config::Scope::Slurm) continue;
    INFO(s.key);
    CHECK(config::get(r.job, s.key) == config::job_registry().parse_text(s, samples(s).first));
    CHECK(config::get(r.job, s.key) != s.default_value);
  }
  CHECK_NOTHROW(slurm::job_options_from(r.job));
}

namespace {
launch::LaunchOptions launch_options(const config::JobInputs& in) {
  launch::LaunchOptions o;
  launch::apply_launch_settings(config::resolve_job(config::job_registry(), in), o);
  return o;
}
std::string refusal(const config::JobInputs& in) {
  try {
    launch_options(in);
  } catch (const Error& e) {
    return e.paragraph();
  }
  return "accepted";
}
}  // namespace

TEST_CASE("a setting of one node or run in a job file, the user file or --set is refused: pass the flag or variable",
          "[launch][settings]") {
  TempDir d;
  config::JobInputs in = nothing_given(d);
  in.job_file = d.write("job.yaml", "launch:\n  nproc_per_node: 2\n  node_rank: 1\n");
  std::string what = refusal(in);
  CHECK_THAT(what, Catch::Contains(in.job_file + ":3:3") && Catch::Contains("'launch.node_rank' cannot come from a job file") &&
                       Catch::Contains("--node-rank VALUE") && Catch::Contains("MTRAIN_NODE_RANK"));

  in.job_file.clear();
  in.user_file = d.write("user.yaml", "launch:\n  dry_run: true\n");
  what = refusal(in);
  CHECK_THAT(what, Catch::Contains("user.yaml") && Catch::Contains("'launch.dry_run' cannot come from the user file") &&
                       Catch::Contains("pass --dry-run on the command line") && Catch::Contains("MTRAIN_DRY_RUN"));

  in.user_file = d.str() + "/none.yaml";
  in.sets = {"launch.format=json"};
  what = refusal(in);
  CHECK_THAT(what, Catch::Contains("--set launch.format=json") && Catch::Contains("'launch.format' cannot come from --set") &&
                       Catch::Contains("--format VALUE") && Catch::Contains("MTRAIN_FORMAT"));

  // The job-wide settings next to them are a job file's to give.
  in.sets.clear();
  in.job_file = d.write("ok.yaml", "launch:\n  role: trainer\n  rdzv_endpoint: node0:29400\n  ssh_option: [A=1, B=2]\n");
  const auto o = launch_options(in);
  CHECK(o.plan.role == "trainer");
  CHECK(o.multi.rdzv_endpoint == "node0:29400");
  CHECK(o.multi.ssh_options == std::vector<std::string>{"A=1", "B=2"});
}

TEST_CASE(
    "launch settings: --node-rank from its flag or MTRAIN_NODE_RANK makes this a static node, its default does not",
    "[launch][settings]") {
  TempDir d;
  config::JobInputs in = nothing_given(d);
  auto o = launch_options(in);
  CHECK(o.plan.node_rank == 0);
  CHECK_FALSE(o.multi.node_rank_given);

  in.env = {{"MTRAIN_NODE_RANK", "0"}};  // node 0 given is not node 0 by default
  o = launch_options(in);
  CHECK(o.plan.node_rank == 0);
  CHECK(o.multi.node_rank_given);

  in.env.clear();
  in.flags = {{"launch.node_rank", "3"}};
  o = launch_options(in);
  CHECK(o.plan.node_rank == 3);
  CHECK(o.multi.node_rank_given);

  in.flags.clear();
  in.env = {{"MTRAIN_NODE_RANK", "65536"}};
  CHECK_THAT(refusal(in), Catch::Contains("MTRAIN_NODE_RANK") && Catch::Contains("above the maximum 65535"));
}

TEST_CASE("launch settings: --no-local-rank wins over launch.local_rank_arg whichever sources give them", "[launch][settings]") {
  TempDir d;
  config::JobInputs in = nothing_given(d);
  in.job_file = d.write("lra.yaml", "launch:\n  local_rank_arg: true\n");
  CHECK(launch_options(in).plan.local_rank_arg);
  in.env = {{"MTRAIN_NO_LOCAL_RANK", "1"}};
  CHECK_FALSE(launch_options(in).plan.local_rank_arg);

  in.env.clear();
  in.job_file = d.write("nlr.yaml", "launch:\n  no_local_rank: true\n");
  in.flags = {{"launch.local_rank_arg", "true"}};  // the higher layer, and still off
  CHECK_FALSE(launch_options(in).plan.local_rank_arg);
}

TEST_CASE("launch settings: -m/--module with --no-python is refused whichever sources give them", "[launch][settings]") {
  TempDir d;
  config::JobInputs in = nothing_given(d);
  in.job_file = d.write("job.yaml", "launch:\n  module: true\n");
  CHECK(launch_options(in).plan.module);
  in.env = {{"MTRAIN_NO_PYTHON", "true"}};
  CHECK_THAT(refusal(in), Catch::Contains("-m/--module and --no-python contradict each other") &&
                              Catch::Contains("launch.module from " + in.job_file) &&
                              Catch::Contains("launch.no_python from MTRAIN_NO_PYTHON"));
}

TEST_CASE("launch settings: -m is launch.module's short flag, --ranks-filter takes ranks, empty is every rank",
          "[launch][settings]") {
  CLI::App app;
  config::JobInputs in;
  in.user_file = "/nonexistent/none.yaml";
  add_flags(app, config::Scope::Launch, in.flags);
  app.parse(std::vector<std::string>{"0,3", "--ranks-filter", "-m"});  // CLI11 takes the words reversed
  const auto o = launch_options(in);
  CHECK(o.plan.module);
  CHECK(o.output.ranks_filter == std::set<int>{0, 3});
  in.flags = {{"launch.ranks_filter", " "}};
  CHECK(launch_options(in).output.ranks_filter.empty());
  in.flags = {{"launch.ranks_filter", "0,,1"}};
  CHECK_THAT(refusal(in), Catch::Contains("--ranks-filter") && Catch::Contains("(empty rank)"));
}

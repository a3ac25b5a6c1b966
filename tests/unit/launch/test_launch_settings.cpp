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

#include "mtrain/config/cli_flags.hpp"
#include "mtrain/config/render.hpp"
#include "mtrain/config/resolve_job.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/launch/launch_settings.hpp"
#include "mtrain/slurm/job_options.hpp"
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

// What the options the libraries receive hold: every field a launch.* or slurm.* setting sets.
json observe(const launch::LaunchOptions& o) {
  return {{"launcher", o.launcher},           {"nproc", o.plan.nproc_per_node}, {"nnodes", o.multi.nnodes},
          {"device", o.plan.device},          {"gpus", o.plan.gpus},            {"include", o.plan.include},
          {"exclude", o.plan.exclude},        {"hostfile", o.multi.hostfile},   {"master_addr", o.plan.master_addr},
          {"master_port", o.master_port},     {"port_given", o.master_port_given},
          {"rdzv_backend", o.multi.rdzv_backend}, {"rdzv_port", o.multi.rdzv_port},
          {"rdzv_timeout", o.multi.rdzv_timeout_s}, {"scale_up", o.multi.scale_up}, {"max_restarts", o.plan.max_restarts},
          {"pass_config", o.pass_config},     {"log_dir", o.output.log_dir},    {"raw", o.output.raw_output},
          {"rdzv_last_call", o.multi.rdzv_last_call_s}, {"node_timeout", o.multi.node_timeout_s},
          {"heartbeat_timeout", o.heartbeat_timeout_s}, {"grace_period", o.grace_period_s},
          {"remote_mtrain", o.multi.remote_mtrain}, {"ssh_identity", o.multi.ssh_identity},
          {"export_env_file", o.multi.export_env_file}, {"tee", o.output.tee}, {"prefix", o.output.prefix_format},
          {"python", o.plan.python}, {"local_rank_arg", o.plan.local_rank_arg}};
}
json observe(const slurm::JobOptions& j) {
  return {{"job_name", j.job_name}, {"partition", j.partition}, {"account", j.account}, {"qos", j.qos},
          {"constraint", j.constraint}, {"nodes", j.nodes}, {"ntasks", j.ntasks_per_node},
          {"gpus", j.gpus_per_node}, {"gres", j.gres}, {"cpus", j.cpus_per_task}, {"mem", j.mem},
          {"time", j.time}, {"exclusive", j.exclusive}, {"output", j.output}, {"error", j.error},
          {"exports", j.exports}, {"sbatch", j.sbatch_lines}, {"setup", j.setup}, {"signal", j.signal},
          {"requeue", j.requeue}, {"pattern", slurm::to_string(j.pattern)}, {"template", j.template_file},
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
};

// The four ways a user gives `text` to setting `s` (no user file, nothing else in the environment).
std::vector<Source> sources(const config::Setting& s, const std::string& text, const TempDir& d) {
  std::vector<Source> out(4);
  for (auto& o : out) o.in.user_file = d.str() + "/no-user-file.yaml";
  out[0].name = "flag " + config::cli_flag(s);
  {
    CLI::App app;
    config::add_setting_flags(app, config::job_registry(), out[0].in.flags, {config::Scope::Launch, config::Scope::Slurm});
    auto words = flag_words(s, text);
    std::reverse(words.begin(), words.end());
    app.parse(words);
  }
  out[1].name = "job file";
  out[1].in.job_file = d.write("job.yaml", yaml_for(s, text));
  out[2].name = "environment " + s.env;
  out[2].in.env = {{s.env, text}};
  out[3].name = "--set";
  out[3].in.sets = {s.key + "=" + text};
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
    config::JobInputs none;
    none.user_file = d.str() + "/no-user-file.yaml";
    const json before = effect(*s, none);
    std::optional<json> first;
    for (const auto& src : sources(*s, good, d)) {
      INFO("from " << src.name);
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

TEST_CASE("launch.launcher and launch.rdzv_port from a job file reach mtrain launch", "[launch][settings]") {
  // Drift (a): both were registry settings that `mtrain launch` never read from a job file.
  TempDir d;
  config::JobInputs in;
  in.user_file = d.str() + "/none.yaml";
  in.job_file = d.write("job.yaml", "launch:\n  launcher: ssh\n  hostfile: hosts\n  rdzv_port: 31234\n");
  launch::LaunchOptions o;
  launch::apply_launch_settings(config::resolve_job(config::job_registry(), in), o);
  CHECK(o.launcher == "ssh");
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
      CHECK(o.master_port == v);
      CHECK(o.master_port_given);
    }
  launch::LaunchOptions o;
  config::JobInputs none;
  none.user_file = d.str() + "/none.yaml";
  launch::apply_launch_settings(config::resolve_job(config::job_registry(), none), o);
  CHECK(o.master_port == "29500");
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
  slurm::JobOptions from_file;
  slurm::apply_job_text(from_file, yaml, "job.yaml");
  CHECK(observe(slurm::job_options_from(r.job)) == observe(from_file));
}

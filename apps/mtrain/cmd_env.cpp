// `mtrain env [--format text|json] [--rdzv-backend B --rdzv-endpoint E]`: flags → ReportOptions →
// envreport::collect_report.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "lib/config/cli_flags.hpp"
#include "lib/config/launch_choices.hpp"
#include "lib/config/output_format.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/environment.hpp"
#include "lib/core/error.hpp"
#include "lib/envreport/report.hpp"
#include "lib/launch/launch.hpp"
#include "generated/version.hpp"
#include "lib/core/own_executable.hpp"
#include "console.hpp"
#include "lib/launch/launch_settings.hpp"

namespace mtrain::app {

namespace {

// The rendezvous a launch from here would use: the flags, else MTRAIN_RDZV_* and the user file
// as `mtrain launch` resolves them. A bad value elsewhere in those is reported by the environment
// section; it must not hide this one.
void rendezvous_of(envreport::ReportOptions& o, const std::string& backend, const std::string& endpoint) {
  config::JobInputs in;
  in.env = mtrain::process_environment();
  if (!backend.empty()) in.flags["launch.rdzv_backend"] = backend;
  if (!endpoint.empty()) in.flags["launch.rdzv_endpoint"] = endpoint;
  try {
    launch::LaunchOptions lo;
    launch::apply_launch_settings(config::resolve_job(config::job_registry(), in), lo);
    const launch::MultiNodeOptions& m = lo.multi;
    // The default (static, no endpoint) is no configured rendezvous: nothing to ask.
    const bool none = m.rdzv_backend == config::RdzvBackend::Static && m.rdzv_endpoint.empty() && backend.empty();
    o.rdzv_backend = none ? std::string() : config::to_string(m.rdzv_backend);
    o.rdzv_endpoint = m.rdzv_endpoint;
    o.rdzv_etcd_cacert = m.rdzv_etcd_cacert;
    o.rdzv_etcd_cert = m.rdzv_etcd_cert;
    o.rdzv_etcd_key = m.rdzv_etcd_key;
    o.rdzv_etcd_api = m.rdzv_etcd_api;
  } catch (const Error&) {
    o.rdzv_backend = backend;
    o.rdzv_endpoint = endpoint;
  }
}

}  // namespace

void build_env(CLI::App* sub, Exit& exit) {
  auto format = std::make_shared<config::OutputFormat>(config::OutputFormat::Text);
  auto backend = std::make_shared<std::string>();
  auto endpoint = std::make_shared<std::string>();
  config::add_choice_option(*sub, "--format", *format, "Output format")->default_str("text");
  sub->add_option("--rdzv-backend", *backend,
                  "Report on this rendezvous (etcd: whether each member answers, and its version); "
                  "default: launch.rdzv_backend from MTRAIN_RDZV_BACKEND or the user file")
      ->check(CLI::IsMember(config::choice_names<config::RdzvBackend>()));
  sub->add_option("--rdzv-endpoint", *endpoint,
                  "Its endpoint (etcd: host1:2379,host2:2379,…); default: launch.rdzv_endpoint");
  sub->callback([format, backend, endpoint, &exit] {
    envreport::ReportOptions o;
    o.version = kVersion;
    o.executable = own_executable();
    o.worker_path = launch::find_worker(o.executable);
    rendezvous_of(o, *backend, *endpoint);
    envreport::PosixSystemProbe probe;
    auto report = envreport::collect_report(probe, o);
    print_stdout(*format == config::OutputFormat::Json ? report.dump(2) + "\n" : envreport::render_text(report));
    exit.code = 0;
  });
}

}  // namespace mtrain::app

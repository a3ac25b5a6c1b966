// `mtrain env [--format text|json]`: flags → ReportOptions → envreport::collect_report.
#include <cstdio>
#include <filesystem>

#include "commands.hpp"
#include "mtrain/envreport/report.hpp"
#include "mtrain/launch/launch.hpp"
#include "mtrain/version.hpp"
#include "mtrain/core/own_executable.hpp"

namespace mtrain::app {

void build_env(CLI::App* sub, Exit& exit) {
  auto format = std::make_shared<std::string>("text");
  sub->add_option("--format", *format, "Output format")->check(CLI::IsMember({"text", "json"}))->default_str("text");
  sub->callback([format, &exit] {
    envreport::ReportOptions o;
    o.version = kVersion;
    o.executable = own_executable();
    o.worker_path = launch::find_worker(o.executable);
    envreport::PosixSystemProbe probe;
    auto report = envreport::collect_report(probe, o);
    std::string out = *format == "json" ? report.dump(2) + "\n" : envreport::render_text(report);
    std::fwrite(out.data(), 1, out.size(), stdout);
    exit.code = 0;
  });
}

}  // namespace mtrain::app

// A YAML job file through `config validate` (parse, per-key checks, cross-field checks) and,
// when it validates, through resolution and the worker's job-spec reader.
#include "fuzz_common.hpp"
#include "lib/config/registry.hpp"
#include "lib/config/validate.hpp"
#include "lib/config/yaml_layer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  const auto& reg = config::job_registry();
  fuzz::accepts([&] {
    auto report = config::validate_text(reg, in, "job.yaml");
    for (const auto& issue : report.issues) FUZZ_CHECK(!issue.text().empty());
    FUZZ_CHECK(!config::format_report(report).empty());
    if (!report.ok()) return;
    auto layer = config::parse_yaml_layer(reg, in, "job.yaml", config::Source::JobFile);
    auto resolved = config::resolve(reg, {layer.layer});
    // What the launcher hands each worker must read back in the worker.
    auto spec = config::job_spec(reg, resolved.job);
    config::load_job(reg, spec, "job spec");
    // The launcher writes the spec as JSON text for the workers (dump throws on bad UTF-8).
    FUZZ_CHECK(!spec.dump().empty());
    FUZZ_CHECK(!resolved.job.dump().empty());
  });
  return 0;
}

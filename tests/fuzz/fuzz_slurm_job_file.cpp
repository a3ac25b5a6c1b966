// A job file's `slurm:` section → Slurm job options (`mtrain slurm submit --config FILE`: the
// file's layer resolved over the defaults, as config::resolve_job does), then the cross-field
// checks and the sbatch script they render to.
#include "fuzz_common.hpp"
#include "lib/config/yaml_layer.hpp"
#include "lib/slurm/job_options.hpp"
#include "lib/slurm/script.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  fuzz::accepts([&] {
    const auto& reg = config::job_registry();
    const config::YamlLayer file = config::parse_yaml_layer(reg, in, "job.yaml", config::Source::JobFile);
    config::throw_if_errors(file.issues, "job.yaml", file.issues_dropped);
    slurm::JobOptions job = slurm::job_options_from(config::resolve(reg, {file.layer}).job);
    job.mtrain = "/usr/bin/mtrain";
    slurm::finalize(job, "/work");
    FUZZ_CHECK(!slurm::render_script(job, {"0.0", "fuzz"}).empty());
  });
  return 0;
}

// A job file's `slurm:` section → Slurm job options (`mtrain slurm submit --config FILE`), then
// the cross-field checks and the sbatch script they render to.
#include "fuzz_common.hpp"
#include "mtrain/slurm/job_options.hpp"
#include "mtrain/slurm/script.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mtrain;
  const std::string in = fuzz::text(data, size);
  fuzz::accepts([&] {
    slurm::JobOptions job;
    slurm::apply_job_text(job, in, "job.yaml");
    job.mtrain = "/usr/bin/mtrain";
    slurm::finalize(job, "/work");
    FUZZ_CHECK(!slurm::render_script(job, {"0.0", "fuzz"}).empty());
  });
  return 0;
}

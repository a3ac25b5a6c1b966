#include "lib/launch/fit_check.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "lib/config/names.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/error.hpp"
#include "lib/estimate/estimate.hpp"
#include "lib/estimate/estimate_job.hpp"
#include "lib/config/job_view.hpp"

namespace mtrain::launch {

FitRecord check_fit(const LaunchOptions& opt, int world, int ranks_per_node, bool gpu_ranks) {
  FitRecord rec;
  if (opt.job_spec_json.empty() || !opt.plan.program.empty() || opt.worker_path.empty()) return rec;
  nlohmann::json job = nlohmann::json::parse(opt.job_spec_json);
  const bool is_auto = !config::job_view(job).strategy.name;
  if (opt.force && !is_auto) return rec;
  if (is_auto && world > ranks_per_node)
    throw UsageError(
        "--strategy auto chooses on one node only: each node's launcher would measure on its own",
        "run `mtrain estimate` with the same flags and pass the strategy it recommends");  // --force: no estimate
                                                                                           // needed to go ahead
  estimate::JobEstimateOptions eo;
  const bool measure = is_auto || gpu_ranks || !opt.device_memory.empty();
  eo.worker_path = measure ? opt.worker_path : std::string();
  eo.world = world;
  eo.ranks_per_node = ranks_per_node;
  eo.device = gpu_ranks ? config::DeviceKind::Gpu : config::DeviceKind::Cpu;
  if (!opt.device_memory.empty()) {
    const auto b = estimate::parse_bytes(opt.device_memory);
    if (!b) throw UsageError("--device-memory '" + opt.device_memory + "' is not a size", "e.g. 80GiB or 24GB");
    eo.device_memory = *b;
  }
  estimate::Estimate e;
  try {
    e = estimate::estimate_job(job, eo);
  } catch (const Error& err) {
    // Measured, the estimate's failure is the job's (the probe refused the model or data: its
    // paragraph, exit 2, before any rank starts). Unmeasured, a TorchScript file has no shapes
    // without the worker: the launch goes ahead unchecked (fit_check.hpp).
    if (is_auto)
      throw Error("--strategy auto needs the estimate, which failed: " + err.message(), err.hint(), err.exit_code());
    if (measure) throw;
    // Said, not silent (issue 45 item 3): this model starts without a fit check.
    std::fputs(
        "mtrain: note: this model starts without a fit check: on CPU ranks without --device-memory only the "
        "built-in models are sized (its shapes need the worker's probe); give --device-memory, or run "
        "`mtrain estimate` with the same flags\n",
        stderr);
    return rec;
  }
  nlohmann::json record = estimate::to_json(e);
  if (is_auto) {
    const auto [row, line] = estimate::choose_auto(e);  // throws (exit 2) when nothing fits
    std::fprintf(stderr, "mtrain: %s\n", line.c_str());
    job["strategy"] = config::to_string(row.c.strategy);
    if (row.c.strategy == config::StrategyName::Fsdp) config::set(job, "fsdp.sharding_strategy", config::to_string(row.c.sharding));
    rec.job_spec_json = job.dump(2);
    record["auto"] = {{"chosen", row.c.label()}, {"flags", row.c.flags()}, {"why", line}};
  } else if (const auto cur = estimate::current_row(e); cur && !cur->fits) {
    record["refused"] = true;
    if (!opt.force) throw UsageError(estimate::refusal_paragraph(e, *cur));
  }
  rec.estimate_json = record.dump(2) + "\n";
  return rec;
}

}  // namespace mtrain::launch

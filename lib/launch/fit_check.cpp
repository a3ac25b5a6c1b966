#include "mtrain/launch/fit_check.hpp"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "mtrain/config/names.hpp"
#include "mtrain/config/registry.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/estimate/estimate.hpp"
#include "mtrain/estimate/estimate_job.hpp"

namespace mtrain::launch {

FitRecord check_fit(LaunchOptions& opt, int world, int ranks_per_node) {
  FitRecord rec;
  if (opt.job_spec_json.empty() || !opt.plan.program.empty() || opt.worker_path.empty()) return rec;
  nlohmann::json job = nlohmann::json::parse(opt.job_spec_json);
  const bool is_auto = config::is_auto_strategy(job.value("strategy", std::string()));
  if (opt.force && !is_auto) return rec;
  if (is_auto && world > ranks_per_node)
    throw Error("--strategy auto chooses on one node only: each node's launcher would measure on its own",
                "run `mtrain estimate` with the same flags and pass the strategy it recommends");  // --force: no estimate needed to go ahead
  estimate::JobEstimateOptions eo;
  eo.worker_path = opt.worker_path;
  eo.world = world;
  eo.ranks_per_node = ranks_per_node;
  eo.device = opt.plan.device;
  if (!opt.device_memory.empty()) {
    const auto b = estimate::parse_bytes(opt.device_memory);
    if (!b) throw Error("--device-memory '" + opt.device_memory + "' is not a size", "e.g. 80GiB or 24GB");
    eo.device_memory = *b;
  }
  estimate::Estimate e;
  try {
    e = estimate::estimate_job(job, eo);
  } catch (const Error& err) {
    if (is_auto) throw Error("--strategy auto needs the estimate, which failed: " + err.message(), err.hint());
    std::fprintf(stderr, "mtrain: warning: no memory estimate, so the fit is not checked: %s\n", err.message().c_str());
    return rec;
  }
  nlohmann::json record = estimate::to_json(e);
  if (is_auto) {
    const auto [row, line] = estimate::choose_auto(e);  // throws (exit 2) when nothing fits
    std::fprintf(stderr, "mtrain: %s\n", line.c_str());
    job["strategy"] = config::to_string(row.c.strategy);
    if (row.c.strategy == config::StrategyName::Fsdp) config::set(job, "fsdp.sharding_strategy", row.c.sharding);
    opt.job_spec_json = job.dump(2);
    record["auto"] = {{"chosen", row.c.label()}, {"flags", row.c.flags()}, {"why", line}};
  } else if (const auto cur = estimate::current_row(e); cur && !cur->fits) {
    record["refused"] = true;
    if (!opt.force) throw Error(estimate::refusal_paragraph(e, *cur));
  }
  rec.estimate_json = record.dump(2) + "\n";
  return rec;
}

}  // namespace mtrain::launch

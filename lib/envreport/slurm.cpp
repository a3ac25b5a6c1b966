// Slurm: whether its client tools are installed, and the allocation this shell is inside (read
// from SLURM_* by the same parser `mtrain launch` uses).
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"
#include "lib/slurm/allocation.hpp"

namespace mtrain::envreport {

json probe_slurm(const SystemProbe& probe, int timeout_ms) {
  json s = {{"installed", false}, {"version", nullptr}, {"in_allocation", false}};
  const std::string sinfo = probe.which("sinfo");
  if (!sinfo.empty()) {
    s["installed"] = true;
    auto v = probe.run({"sinfo", "--version"}, timeout_ms);
    if (v.rc == 0) {
      s["version"] = str::trim(v.out);
    } else {
      // sinfo exits non-zero when it finds no slurm.conf / controller: say so, it is the usual
      // reason jobs cannot be submitted from this host.
      auto lines = str::split(str::trim(v.err), '\n');
      s["problem"] = "`sinfo --version` failed" + (lines.empty() || lines.back().empty() ? std::string() : ": " + lines.back());
    }
  }
  const auto env = probe.environment();
  try {
    auto a = slurm::allocation_from_env(env);
    if (a) {
      auto get = [&](const char* k) { auto it = env.find(k); return it == env.end() ? json(nullptr) : json(it->second); };
      s["in_allocation"] = true;
      s["allocation"] = {{"job_id", a->job_id},
                         {"nodes", a->nodes},
                         {"node_id", a->node_id},
                         {"in_step", a->in_step},
                         {"ntasks", a->ntasks},
                         {"tasks_per_node", a->tasks_per_node},
                         {"gpus_on_node", a->gpus_on_node},
                         {"cpus_on_node", a->cpus_on_node},
                         {"partition", get("SLURM_JOB_PARTITION")},
                         {"master_addr", a->master_addr},
                         {"master_port", a->master_port}};
    }
  } catch (const Error& e) {
    s["in_allocation"] = true;
    s["error"] = e.message();
  }
  return s;
}

}  // namespace mtrain::envreport

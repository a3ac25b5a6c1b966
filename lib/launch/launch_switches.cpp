#include "mtrain/launch/launch_switches.hpp"

#include "mtrain/core/error.hpp"
#include "mtrain/topology/gpu_list.hpp"

namespace mtrain::launch {

void apply_launch_switches(const LaunchSwitches& s, LaunchOptions& o) {
  if (o.plan.module && o.plan.no_python)
    throw Error("-m/--module and --no-python contradict each other",
                "Keep -m to run PROGRAM as a Python module, or --no-python to execute it directly.");
  if (s.no_local_rank) o.plan.local_rank_arg = false;
  o.output.prefix = !s.no_prefix;
  o.output.ranks_filter.clear();
  if (!s.ranks_filter.empty())
    for (int r : topology::parse_gpu_list(s.ranks_filter, "--ranks-filter")) o.output.ranks_filter.insert(r);
}

}  // namespace mtrain::launch

#include "lib/launch/estimate_world.hpp"

#include "lib/config/job_choice.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/config/registry.hpp"
#include "lib/estimate/world.hpp"
#include "lib/topology/hostfile.hpp"

namespace mtrain::launch {

estimate::JobEstimateOptions estimate_options(const LaunchOptions& opt, const plan::HostFacts& here) {
  estimate::JobEstimateOptions o;
  o.device = opt.plan.device;
  plan::PlanOptions p;
  // Not given: auto, which a hostfile's slots take the place of (world_of).
  const config::RankCount nproc = opt.plan.nproc_per_node.value_or(config::RankCount{});
  p.nproc_per_node = nproc;
  p.device = o.device;
  int hosts = 0, slots = 0;
  if (!opt.multi.hostfile.empty()) {
    const auto inv = topology::load_hostfile(opt.multi.hostfile);
    hosts = static_cast<int>(inv.size());
    slots = inv.empty() ? 0 : static_cast<int>(inv.front().slots.size());
  } else {
    p.gpus = opt.plan.gpus;
    p.include = opt.plan.include;
    p.exclude = opt.plan.exclude;
  }
  o.gpus = static_cast<int>(plan::selected_gpus(p, here).size());
  const auto w =
      estimate::world_of(nproc, opt.multi.nnodes, {here.cpu_count, o.gpus}, hosts, slots, opt.multi.num_nodes);
  o.world = w.world;
  o.ranks_per_node = w.ranks_per_node;
  // The registry checked the text (launch.device_memory is a size or "").
  if (!opt.device_memory.empty()) o.device_memory = estimate::parse_bytes(opt.device_memory);
  return o;
}

}  // namespace mtrain::launch

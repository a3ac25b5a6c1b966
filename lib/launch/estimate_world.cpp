#include "lib/launch/estimate_world.hpp"

#include "lib/config/job_choice.hpp"
#include "lib/config/rank_count.hpp"
#include "lib/config/registry.hpp"
#include "lib/estimate/world.hpp"
#include "lib/topology/hostfile.hpp"

namespace mtrain::launch {

estimate::JobEstimateOptions estimate_options(const nlohmann::json& job, const plan::HostFacts& here) {
  auto text = [&](const char* k) { return config::get(job, k).get<std::string>(); };
  estimate::JobEstimateOptions o;
  o.device = config::choice_at<config::DeviceKind>(job, "launch.device");
  plan::PlanOptions p;
  p.nproc_per_node = config::rank_count_from_text(text("launch.nproc_per_node"), "launch.nproc_per_node");
  p.device = o.device;
  int hosts = 0, slots = 0;
  if (!text("launch.hostfile").empty()) {
    const auto inv = topology::load_hostfile(text("launch.hostfile"));
    hosts = static_cast<int>(inv.size());
    slots = inv.empty() ? 0 : static_cast<int>(inv.front().slots.size());
  } else {
    p.gpus = text("launch.gpus");
    p.include = text("launch.include");
    p.exclude = text("launch.exclude");
  }
  o.gpus = static_cast<int>(plan::selected_gpus(p, here).size());
  const auto w = estimate::world_of(*p.nproc_per_node, text("launch.nnodes"), {here.cpu_count, o.gpus}, hosts, slots,
                                    static_cast<int>(config::get(job, "launch.num_nodes").get<long long>()));
  o.world = w.world;
  o.ranks_per_node = w.ranks_per_node;
  if (!text("launch.device_memory").empty()) o.device_memory = estimate::parse_bytes(text("launch.device_memory"));
  return o;
}

}  // namespace mtrain::launch

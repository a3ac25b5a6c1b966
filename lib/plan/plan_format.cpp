// The plan as JSON (the contract of docs/architecture.md §4) and as text for people.
#include <fmt/format.h>

#include "lib/core/strings.hpp"
#include "lib/plan/plan.hpp"

namespace mtrain::plan {

nlohmann::json to_json(const LaunchPlan& p) {
  using nlohmann::json;
  json nodes = json::array();
  for (const auto& n : p.nodes) {
    json workers = json::array();
    for (const auto& w : n.workers) {
      workers.push_back({{"rank", w.rank},
                         {"local_rank", w.local_rank},
                         {"gpu", w.gpu ? json(*w.gpu) : json(nullptr)},
                         {"argv", w.argv},
                         {"env", w.env}});
    }
    nodes.push_back({{"host", n.host}, {"node_rank", n.node_rank}, {"gpus", n.gpus}, {"workers", workers}});
  }
  return {{"version", p.version},
          {"job_id", p.job_id},
          {"world_size", p.world_size},
          {"nnodes", p.nnodes},
          {"master_addr", p.master_addr},
          {"master_port", p.master_port},
          {"max_restarts", p.max_restarts},
          {"rdzv", {{"backend", config::to_string(p.rdzv_backend)}, {"endpoint", p.rdzv_endpoint}}},
          {"nodes", nodes}};
}

std::string to_text(const LaunchPlan& p) {
  std::string out = fmt::format("job {}: {} rank{} on {} node{}, master {}:{}, rendezvous {}\n", p.job_id,
                                p.world_size, p.world_size == 1 ? "" : "s", p.nnodes, p.nnodes == 1 ? "" : "s",
                                p.master_addr, p.master_port, config::to_string(p.rdzv_backend));
  for (const auto& n : p.nodes) {
    std::vector<std::string> g;
    for (int x : n.gpus) g.push_back(std::to_string(x));
    out += fmt::format("node {} {}: GPUs {}\n", n.node_rank, n.host, g.empty() ? "none (CPU)" : str::join(g, ","));
    for (const auto& w : n.workers)
      out += fmt::format("  rank {} (local {}{}): {}\n", w.rank, w.local_rank,
                         w.gpu ? fmt::format(", GPU {}", *w.gpu) : "", str::shell_join(w.argv));
  }
  return out;
}

std::string render(const LaunchPlan& p, config::PlanFormat format) {
  switch (format) {
    case config::PlanFormat::Text: return to_text(p);
    case config::PlanFormat::Json: return to_json(p).dump(2) + "\n";
  }
  config::no_such_value(format);
}

}  // namespace mtrain::plan

// The table `mtrain estimate` prints, and its JSON (--format json).
#include <fmt/format.h>

#include <algorithm>

#include "lib/core/strings.hpp"
#include "lib/estimate/estimate.hpp"

namespace mtrain::estimate {

namespace {

// The table's one unit: the largest binary unit in which the biggest TOTAL is at least 1, so a
// 26K-parameter model reads in MiB, not as a column of 0.00 GiB (issue 45 item 3).
struct TableUnit {
  const char* name;
  double bytes;
};

TableUnit table_unit(const std::vector<Row>& rows) {
  double most = 0;
  for (const Row& r : rows) most = std::max(most, r.total);
  if (most >= 1073741824.0) return {"GiB", 1073741824.0};
  if (most >= 1048576.0) return {"MiB", 1048576.0};
  return {"KiB", 1024.0};
}

// Parameters as people say them: 835, 26.0K, 124.4M, 6.86B.
std::string parameter_count(int64_t n) {
  const double v = static_cast<double>(n);
  if (n < 1000) return std::to_string(n);
  if (v < 1e6) return fmt::format("{:.1f}K", v / 1e3);
  if (v < 1e9) return fmt::format("{:.1f}M", v / 1e6);
  return fmt::format("{:.2f}B", v / 1e9);
}

nlohmann::json row_json(const Row& r) {
  return {{"strategy", config::to_string(r.c.strategy)},
          {"sharding_strategy", r.c.strategy == config::StrategyName::Fsdp ? config::to_string(r.c.sharding) : ""},
          {"label", r.c.label()},
          {"activation_checkpointing", r.c.checkpointing},
          {"offload", r.c.offload},
          {"flags", r.c.flags()},
          {"bytes_per_rank",
           {{"params", r.params},
            {"grads", r.grads},
            {"optimizer", r.optimizer},
            {"gathered", r.gathered},
            {"buckets", r.buckets},
            {"activations", r.activations},
            {"runtime", r.runtime},
            {"host_offloaded", r.host},
            {"export_copy", r.export_copy},
            {"total", r.total}}},
          {"comm_bytes_per_step", r.comm_bytes},
          {"comm_formula", r.comm_formula},
          {"relative_step_cost", r.speed_cost},
          {"fits", r.fits}};
}

}  // namespace

std::string render_text(const Estimate& e) {
  const Settings& s = e.settings;
  const Measured& m = e.measured;
  std::string out = fmt::format("Model: {}, Ψ = {} parameters ({})\n", m.model.label, m.model.num_params(),
                                parameter_count(m.model.num_params()));
  out += fmt::format("World: {} rank(s), {} per node; precision {}; micro-batch {} per rank; Adam\n", s.world,
                     s.ranks_per_node, config::to_string(s.precision), s.batch);
  out += fmt::format("Device memory per rank: {}\n", e.target.bytes_per_rank > 0 ? e.target.what : "unknown");
  out += fmt::format("Activations: {} ({})\n", human_bytes(m.activations.bytes), m.activations.how.empty() ? "-" : m.activations.how);
  if (m.activations_ckpt.measured && m.activations_ckpt.bytes != m.activations.bytes)
    out += fmt::format("  with activation checkpointing: {}\n", human_bytes(m.activations_ckpt.bytes));
  out += fmt::format("Runtime: {} ({})\n\n", human_bytes(m.runtime_bytes), m.runtime_how.empty() ? "not measured" : m.runtime_how);
  const TableUnit unit = table_unit(e.rows);
  auto in_unit = [&unit](double b) { return fmt::format("{:.2f}", b / unit.bytes); };
  out += fmt::format("{:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>10}  {}\n",
                     fmt::format("strategy ({} per rank)", unit.name), "params", "grads", "optim", "gather", "buckets",
                     "activ", "runtime", "TOTAL", "comm/step", "fits");
  for (size_t i = 0; i < e.rows.size(); ++i) {
    const Row& r = e.rows[i];
    out +=
        fmt::format("{:<26} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>10}  {}{}\n", r.c.label(),
                    in_unit(r.params), in_unit(r.grads), in_unit(r.optimizer), in_unit(r.gathered), in_unit(r.buckets),
                    in_unit(r.activations), in_unit(r.runtime), in_unit(r.total), human_bytes(r.comm_bytes),
                    e.target.bytes_per_rank <= 0 ? "?"
                    : r.fits                     ? "yes"
                                                 : "no",
                    e.recommended && *e.recommended == i ? "  <- recommended" : "");
  }
  if (s.ranks_per_node >= s.world) out += "(fsdp/HYBRID_SHARD is fsdp/FULL_SHARD on one node)\n";
  bool any_host = false;
  for (const auto& r : e.rows) any_host = any_host || r.host > 0;
  if (any_host) out += "(offloaded state is in host memory, not in these columns)\n";
  bool any_export = false;
  for (const auto& r : e.rows) any_export = any_export || r.export_copy > 0;
  if (any_export)
    out += "(TOTAL includes, where a row has it, what the final export adds: rank 0's copy of the weights while it "
           "saves model.scripted.pt beyond the memory training freed, or a unit's fp32 gather; --format json: export_copy)\n";
  out += "\ncomm/step: bytes each rank sends per step (docs/architecture.md §6): ";
  out += e.rows.empty() ? "" : e.rows.front().comm_formula;
  out += fmt::format("\nRecommended: {}\n", e.why);
  return out;
}

nlohmann::json to_json(const Estimate& e) {
  const Settings& s = e.settings;
  const Measured& m = e.measured;
  nlohmann::json rows = nlohmann::json::array(), alts = nlohmann::json::array();
  for (const auto& r : e.rows) rows.push_back(row_json(r));
  for (const auto& r : e.alternatives) alts.push_back(row_json(r));
  return {{"version", 1},
          {"model", {{"label", m.model.label}, {"num_params", m.model.num_params()}, {"largest_unit", m.model.largest_unit()}}},
          {"world_size", s.world},
          {"ranks_per_node", s.ranks_per_node},
          {"precision", config::to_string(s.precision)},
          {"batch_size", s.batch},
          {"device_memory_bytes", e.target.bytes_per_rank},
          {"device", e.target.what},
          {"activations", {{"bytes", m.activations.bytes}, {"checkpointed_bytes", m.activations_ckpt.bytes}, {"how", m.activations.how}}},
          {"runtime", {{"bytes", m.runtime_bytes}, {"how", m.runtime_how}}},
          {"rows", rows},
          {"alternatives", alts},
          {"recommended", e.recommended ? nlohmann::json(e.rows[*e.recommended].c.label()) : nlohmann::json()},
          {"why", e.why}};
}

}  // namespace mtrain::estimate

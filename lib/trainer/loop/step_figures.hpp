#pragma once
// The per-step figures of summary.json (docs/architecture.md §5), as pure functions of the
// communicator's counters and the measured step times: collectives per training step with the
// phases that are not training steps (validation, checkpoint, export) booked apart, and step-time
// statistics after the warm-up steps.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/trainer/comm/communicator.hpp"

namespace mtrain::trainer {

// a - b, per collective (counters only grow, so every entry of b is in a); and into += more.
CommCounters counters_minus(CommCounters a, const CommCounters& b);
void counters_add(CommCounters& into, const CommCounters& more);

// Collectives the loop itself issues (metric averages, stop-signal agreement, checkpoint votes)
// are reported apart from the strategy's training communication.
bool is_metrics_counter(const std::string& name);

struct CommPerStep {
  nlohmann::json comm = nlohmann::json::object();     // comm_per_step: training collectives
  nlohmann::json metrics = nlohmann::json::object();  // comm_metrics_per_step: the loop's own
  nlohmann::json outside = nlohmann::json::object();  // comm_outside_steps: totals per phase
  double wire_bytes = 0;                              // wire_bytes_per_step
};
// `all`: the run's counters; `phases`: what each non-step phase issued (subtracted from `all`).
CommPerStep comm_per_step(const CommCounters& all, const std::map<std::string, CommCounters>& phases,
                          double steps_run);

// {"warmup_steps", "timed_steps", "min", "median", "max"} over the steps after `warmup` (all of
// them when there are no more).
nlohmann::json step_time_stats(const std::vector<double>& step_times, int64_t warmup);

}  // namespace mtrain::trainer

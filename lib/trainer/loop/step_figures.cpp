#include "lib/trainer/loop/step_figures.hpp"

#include <algorithm>

#include "lib/trainer/loop/metrics.hpp"

namespace mtrain::trainer {

using nlohmann::json;

CommCounters counters_minus(CommCounters a, const CommCounters& b) {
  for (const auto& [name, c] : b) {
    CommStats& x = a[name];
    x.calls -= c.calls;
    x.payload_bytes -= c.payload_bytes;
    x.wire_bytes -= c.wire_bytes;
    if (x.calls == 0) a.erase(name);
  }
  return a;
}

void counters_add(CommCounters& into, const CommCounters& more) {
  for (const auto& [name, c] : more) {
    CommStats& x = into[name];
    x.calls += c.calls;
    x.payload_bytes += c.payload_bytes;
    x.wire_bytes += c.wire_bytes;
  }
}

bool is_metrics_counter(const std::string& name) {
  return name.find("(metrics)") != std::string::npos || name.find("(control)") != std::string::npos;
}

CommPerStep comm_per_step(const CommCounters& all, const std::map<std::string, CommCounters>& phases,
                          double steps_run) {
  CommPerStep out;
  CommCounters steps = all;
  for (const auto& [phase, pc] : phases) {
    steps = counters_minus(steps, pc);
    json e = json::object();
    for (const auto& [name, c] : pc) {
      if (is_metrics_counter(name)) continue;
      e[name] = {{"calls", c.calls}, {"payload_bytes", c.payload_bytes}, {"wire_bytes", c.wire_bytes}};
    }
    out.outside[phase] = e;
  }
  for (const auto& [name, c] : steps) {
    json e{{"calls", c.calls / steps_run},
           {"payload_bytes", c.payload_bytes / steps_run},
           {"wire_bytes", c.wire_bytes / steps_run}};
    if (is_metrics_counter(name)) {
      out.metrics[name] = e;
    } else {
      out.comm[name] = e;
      out.wire_bytes += c.wire_bytes / steps_run;
    }
  }
  return out;
}

json step_time_stats(const std::vector<double>& step_times, int64_t warmup) {
  const size_t warm = step_times.size() > static_cast<size_t>(warmup) ? static_cast<size_t>(warmup) : 0;
  const std::vector<double> times(step_times.begin() + static_cast<std::ptrdiff_t>(warm), step_times.end());
  return {{"warmup_steps", warm},
          {"timed_steps", times.size()},
          {"min", times.empty() ? 0.0 : *std::min_element(times.begin(), times.end())},
          {"median", median(times)},
          {"max", times.empty() ? 0.0 : *std::max_element(times.begin(), times.end())}};
}

}  // namespace mtrain::trainer

#include "lib/runs/segments.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace mtrain::runs {

namespace {

Segment segment_of(const Run& r) { return {r.name, r.path, r.start_step, r.steps}; }

// The points of `curve` up to step `upto`, then `next`.
void splice(std::vector<std::pair<double, double>>& curve, double upto, const std::vector<std::pair<double, double>>& next) {
  curve.erase(std::remove_if(curve.begin(), curve.end(), [&](const auto& p) { return p.first > upto; }), curve.end());
  curve.insert(curve.end(), next.begin(), next.end());
}

void append(Run& run, const Run& next) {
  if (run.segments.empty()) run.segments.push_back(segment_of(run));
  run.segments.push_back(segment_of(next));
  const auto upto = static_cast<double>(next.start_step);
  splice(run.loss, upto, next.loss);
  splice(run.val, upto, next.val);
  run.strategy = next.strategy;
  run.model = next.model;
  run.world = next.world;
  run.steps = next.steps;
  run.total_steps = next.total_steps;
  run.final_loss = next.final_loss;
  run.final_val = next.final_val;
  run.state = next.state;
  run.duration_s += next.duration_s;
  run.warnings.insert(run.warnings.end(), next.warnings.begin(), next.warnings.end());
}

}  // namespace

std::vector<Run> join_segments(std::vector<Run> runs) {
  std::vector<Run> out;
  for (auto& r : runs) {
    Run* previous = nullptr;  // the newest run so far in r's work dir
    const fs::path dir = fs::path(r.path).parent_path();
    for (auto it = out.rbegin(); it != out.rend() && !previous; ++it) {
      const Segment last = it->segments.empty() ? segment_of(*it) : it->segments.back();
      if (fs::path(last.path).parent_path() == dir) previous = &*it;
    }
    if (r.start_step > 0 && previous && previous->steps >= r.start_step) {
      append(*previous, r);
    } else {
      out.push_back(std::move(r));
    }
  }
  return out;
}

long long steps_run(const Run& r) {
  if (r.segments.empty()) return std::max(0LL, r.steps - r.start_step);
  long long n = 0;
  for (const auto& s : r.segments) n += std::max(0LL, s.steps - s.start_step);
  return n;
}

std::string segments_note(const Run& r) {
  if (r.segments.empty()) return r.start_step > 0 ? fmt::format(" (from step {})", r.start_step) : "";
  std::string parts;
  for (const auto& s : r.segments) parts += (parts.empty() ? "" : " + ") + std::to_string(std::max(0LL, s.steps - s.start_step));
  return fmt::format(" ({} segments: {} steps)", r.segments.size(), parts);
}

}  // namespace mtrain::runs

#include "mtrain/bench/train_bench.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "mtrain/bench/measures.hpp"
#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/envreport/run_command.hpp"
#include "mtrain/envreport/report.hpp"

namespace fs = std::filesystem;

namespace mtrain::bench {

namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json num_or_null(const json& j, const std::string& key) { return j.contains(key) ? j.at(key) : json(nullptr); }

std::string fmt_num(const json& v, const char* spec) { return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>()) : "-"; }

std::string fmt_bytes(const json& v) { return v.is_number() ? envreport::human_bytes(v.get<double>()) : "-"; }

}  // namespace

std::vector<Cell> train_cells(const TrainBenchOptions& o, const std::string& root) {
  std::vector<Cell> cells;
  for (const auto& s : o.strategies) {
    for (int n : o.nproc) {
      Cell c;
      c.strategy = s;
      c.nproc = n;
      c.work_dir = (fs::path(root) / fmt::format("{}-n{}", s, n)).string();
      c.argv = {o.mtrain_path, "launch", "--nproc-per-node", std::to_string(n), "--master-port", "auto",
                "--launcher", "local", "--strategy", s};
      if (!o.model.empty()) c.argv.insert(c.argv.end(), {"--model", o.model});
      if (!o.config.empty()) c.argv.insert(c.argv.end(), {"--config", o.config});
      c.argv.insert(c.argv.end(), {"--set", "train.max_steps=" + std::to_string(o.steps), "--set", "train.work_dir=" + c.work_dir});
      for (const auto& kv : o.sets) c.argv.insert(c.argv.end(), {"--set", kv});
      cells.push_back(c);
    }
  }
  return cells;
}

std::string failure_reason(const std::string& log) {
  std::vector<std::string> lines, errors;
  for (auto& l : str::split(log, '\n'))
    if (!str::trim(l).empty()) lines.push_back(str::trim(l));
  for (const auto& l : lines)
    if (l.find("error") != std::string::npos || l.find("Error") != std::string::npos) errors.push_back(l);
  const auto& pick = errors.empty() ? lines : errors;
  if (pick.empty()) return "no output";
  std::string reason = pick.back();
  if (reason.size() > 400) reason = reason.substr(0, 400) + "…";
  return reason;
}

BenchReport run_train_cells(const std::vector<Cell>& cells, const TrainBenchOptions& o, const CellRunner& run) {
  BenchReport r;
  r.table.headers = {"strategy", "nproc", "status", "step(ms)", "samples/s", "tokens/s", "peak mem", "state/rank", "wire/step",
                     "final loss"};
  r.table.left = {true, false, true};
  json rows = json::array();
  std::map<std::string, Series> series;
  int failed = 0;
  std::vector<std::string> errors;
  for (const auto& c : cells) {
    std::fprintf(stderr, "mtrain bench train: %s on %d rank(s)…\n", c.strategy.c_str(), c.nproc);
    fs::create_directories(c.work_dir);
    const std::string log = c.work_dir + ".log";
    auto res = run(c.argv, log, o.timeout_ms);
    json row = {{"strategy", c.strategy}, {"nproc", c.nproc}, {"work_dir", c.work_dir}, {"command", str::shell_join(c.argv)}};
    const std::string summary_path = c.work_dir + "/summary.json";
    json s;
    std::string error;
    if (!res.started || res.rc != 0) {
      error = fmt::format("exit {}: {}", res.rc, failure_reason(slurp(log) + res.err));
    } else {
      try {
        s = json::parse(slurp(summary_path));
      } catch (const std::exception& e) {
        error = fmt::format("no readable {} ({})", summary_path, e.what());
      }
    }
    if (!error.empty()) {
      ++failed;
      row["status"] = "failed";
      row["error"] = error;
      r.table.rows.push_back({c.strategy, std::to_string(c.nproc), fmt::format("failed [{}]", failed)});
      errors.push_back(fmt::format("[{}] {} on {} rank(s): {}", failed, c.strategy, c.nproc, error));
      rows.push_back(row);
      continue;
    }
    const json tp = s.value("throughput", json::object());
    const json state = s.value("model_state_bytes_per_rank", json::object());
    double state_total = 0;
    for (const char* k : {"params", "grads", "optimizer"})
      if (state.contains(k) && state.at(k).is_number()) state_total += state.at(k).get<double>();
    row["status"] = "ok";
    for (const char* k : {"world_size", "num_params", "steps", "final_loss", "step_time_median_s", "peak_memory_bytes",
                          "wire_bytes_per_step"})
      row[k] = num_or_null(s, k);
    row["throughput"] = tp;
    row["model_state_bytes_per_rank"] = state;
    row["model_state_bytes_total_per_rank"] = state_total;
    rows.push_back(row);
    const json step = num_or_null(s, "step_time_median_s");
    r.table.rows.push_back({c.strategy, std::to_string(c.nproc), "ok",
                            step.is_number() ? fmt::format("{:.1f}", step.get<double>() * 1e3) : "-",
                            fmt_num(num_or_null(tp, "samples_per_s"), "{:.1f}"), fmt_num(num_or_null(tp, "tokens_per_s"), "{:.0f}"),
                            fmt_bytes(num_or_null(s, "peak_memory_bytes")), fmt_bytes(json(state_total)),
                            fmt_bytes(num_or_null(s, "wire_bytes_per_step")), fmt_num(num_or_null(s, "final_loss"), "{:.4f}")});
    if (tp.contains("samples_per_s") && tp.at("samples_per_s").is_number()) {
      auto& se = series[c.strategy];
      se.name = c.strategy;
      se.points.emplace_back(c.nproc, tp.at("samples_per_s").get<double>());
    }
  }
  r.notes.push_back(fmt::format("# {} steps per cell; step = median step time; state/rank = params + grads + optimizer "
                                "bytes on the fullest rank; wire/step = bytes each rank sends per step",
                                o.steps));
  if (failed) r.notes.push_back(fmt::format("# {} of {} cell(s) failed; their logs are <work_dir>.log", failed, cells.size()));
  r.notes.insert(r.notes.end(), errors.begin(), errors.end());
  r.doc = {{"bench", "train"}, {"steps", o.steps}, {"rows", rows}, {"failed", failed}};
  r.plot.title = "mtrain bench train: throughput by strategy and world size";
  r.plot.xlabel = "ranks (nproc)";
  r.plot.ylabel = "samples/s";
  r.plot.logx = true;
  for (auto& [name, s] : series) r.plot.series.push_back(s);
  return r;
}

BenchReport run_train_bench(const TrainBenchOptions& o) {
  if (o.steps < 1) throw Error(fmt::format("--steps {} must be at least 1", o.steps));
  std::string root = o.work_root;
  const bool temp = root.empty();
  if (temp) {
    const char* tmp = std::getenv("TMPDIR");
    root = (fs::path(tmp && *tmp ? tmp : "/tmp") / fmt::format("mtrain-bench-train-{}", ::getpid())).string();
  }
  auto cells = train_cells(o, root);
  BenchReport r = run_train_cells(cells, o, [](const std::vector<std::string>& argv, const std::string& log, int timeout_ms) {
    envreport::RunOptions ro;
    ro.timeout_ms = timeout_ms;
    ro.stdout_file = log;
    ro.merge_stderr = true;
    return envreport::run_command(argv, ro);
  });
  if (temp) {
    std::error_code ec;
    fs::remove_all(root, ec);
    for (auto& row : r.doc["rows"]) row.erase("work_dir");
  }
  return r;
}

}  // namespace mtrain::bench

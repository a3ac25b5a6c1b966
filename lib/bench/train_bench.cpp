#include "lib/bench/train_bench.hpp"

#include <unistd.h>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "lib/bench/measures.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/envreport/run_command.hpp"
#include "lib/envreport/report.hpp"

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

std::string fmt_bytes(const json& v) { return v.is_number() ? human_bytes(v.get<double>(), 1) : "-"; }

}  // namespace

std::vector<Cell> train_cells(const TrainBenchOptions& o, const std::string& root) {
  std::vector<Cell> cells;
  for (int round = 1; round <= o.rounds; ++round) {
    for (const auto& s : o.strategies) {
      for (int n : o.nproc) {
        Cell c;
        c.strategy = s;
        c.nproc = n;
        c.round = round;
        c.work_dir = (fs::path(root) / fmt::format("{}-n{}-r{}", s, n, round)).string();
        c.argv = {o.mtrain_path, "launch", "--nproc-per-node", std::to_string(n), "--master-port", "auto",
                  "--launcher", "local", "--strategy", s};
        if (!o.model.empty()) c.argv.insert(c.argv.end(), {"--model", o.model});
        if (!o.config.empty()) c.argv.insert(c.argv.end(), {"--config", o.config});
        c.argv.insert(c.argv.end(), {"--set", "train.max_steps=" + std::to_string(o.warmup + o.steps), "--set",
                                     "train.timing_warmup_steps=" + std::to_string(o.warmup), "--set",
                                     "train.work_dir=" + c.work_dir});
        for (const auto& kv : o.sets) c.argv.insert(c.argv.end(), {"--set", kv});
        cells.push_back(c);
      }
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

namespace {

// One (strategy, world size) over its rounds.
struct CellRuns {
  std::string strategy;
  int nproc = 0;
  std::vector<json> summaries;
  std::string error;  // the first failed round's
  std::string command;
  std::string work_dir;
};

double step_stat(const json& s, const char* which) {
  if (s.contains("step_time_s") && s.at("step_time_s").contains(which)) return s.at("step_time_s").at(which).get<double>();
  return s.value("step_time_median_s", 0.0);
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  const size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Runs the cells in their order (rounds interleaved), gathering each (strategy, world size)'s
// summaries in first-run order; a cell that failed once is not run again.
std::vector<CellRuns> run_rounds(const std::vector<Cell>& cells, const TrainBenchOptions& o, const CellRunner& run) {
  std::vector<CellRuns> by_cell;
  auto find = [&](const Cell& c) -> CellRuns& {
    for (auto& x : by_cell)
      if (x.strategy == c.strategy && x.nproc == c.nproc) return x;
    by_cell.push_back({c.strategy, c.nproc, {}, "", str::shell_join(c.argv), c.work_dir});
    return by_cell.back();
  };
  for (const auto& c : cells) {
    CellRuns& cr = find(c);
    if (!cr.error.empty()) continue;
    std::fprintf(stderr, "mtrain bench train: round %d/%d: %s on %d rank(s)…\n", c.round, o.rounds, c.strategy.c_str(),
                 c.nproc);
    fs::create_directories(c.work_dir);
    const std::string log = c.work_dir + ".log";
    auto res = run(c.argv, log, o.timeout_ms);
    const std::string summary_path = c.work_dir + "/summary.json";
    if (!res.started || res.rc != 0) {
      cr.error = fmt::format("exit {}: {}", res.rc, failure_reason(slurp(log) + res.err));
      continue;
    }
    try {
      cr.summaries.push_back(json::parse(slurp(summary_path)));
    } catch (const std::exception& e) {
      cr.error = fmt::format("no readable {} ({})", summary_path, e.what());
    }
  }
  return by_cell;
}

// The report as cells are added to it: JSON rows, throughput series, numbered failures.
struct Tally {
  json rows = json::array();
  std::map<std::string, Series> series;
  int failed = 0;
  std::vector<std::string> errors;  // "[N] strategy on K rank(s): why", under the table
};

void add_failed_cell(const CellRuns& cr, json row, Table& table, Tally& t) {
  ++t.failed;
  row["status"] = "failed";
  row["error"] = cr.error;
  table.rows.push_back({cr.strategy, std::to_string(cr.nproc), fmt::format("failed [{}]", t.failed)});
  t.errors.push_back(fmt::format("[{}] {} on {} rank(s): {}", t.failed, cr.strategy, cr.nproc, cr.error));
  t.rows.push_back(row);
}

// A cell whose rounds all ran: step time min / median / max over the rounds, the median
// round's throughput (tokens/s scaled with it), the peak memory of any round, and the last
// round's other figures.
void add_measured_cell(const CellRuns& cr, json row, Table& table, Tally& t) {
  std::vector<double> mins, meds, maxs, sps;
  for (const auto& s : cr.summaries) {
    mins.push_back(step_stat(s, "min"));
    meds.push_back(step_stat(s, "median"));
    maxs.push_back(step_stat(s, "max"));
    sps.push_back(s.value("throughput", json::object()).value("samples_per_s", 0.0));
  }
  const json& s = cr.summaries.back();
  json tp = s.value("throughput", json::object());
  if (tp.contains("samples_per_s")) {
    const double ratio = tp.at("samples_per_s").get<double>() > 0 ? median_of(sps) / tp.at("samples_per_s").get<double>() : 1;
    tp["samples_per_s"] = median_of(sps);
    if (tp.contains("tokens_per_s")) tp["tokens_per_s"] = tp.at("tokens_per_s").get<double>() * ratio;
  }
  const json state = s.value("model_state_bytes_per_rank", json::object());
  double state_total = 0;
  for (const char* k : {"params", "grads", "optimizer"})
    if (state.contains(k) && state.at(k).is_number()) state_total += state.at(k).get<double>();
  double peak = 0;
  for (const auto& x : cr.summaries) peak = std::max(peak, x.value("peak_memory_bytes", 0.0));
  const double lo = *std::min_element(mins.begin(), mins.end());
  const double med = median_of(meds);
  const double hi = *std::max_element(maxs.begin(), maxs.end());
  row["status"] = "ok";
  for (const char* k : {"world_size", "num_params", "steps", "final_loss", "wire_bytes_per_step"}) row[k] = num_or_null(s, k);
  row["rounds"] = cr.summaries.size();
  row["step_time_median_s"] = med;
  row["step_time_s"] = {{"min", lo}, {"median", med}, {"max", hi}};
  row["peak_memory_bytes"] = peak;
  row["throughput"] = tp;
  row["model_state_bytes_per_rank"] = state;
  row["model_state_bytes_total_per_rank"] = state_total;
  t.rows.push_back(row);
  table.rows.push_back({cr.strategy, std::to_string(cr.nproc), "ok", fmt::format("{:.1f}/{:.1f}/{:.1f}", lo * 1e3, med * 1e3, hi * 1e3),
                        fmt_num(num_or_null(tp, "samples_per_s"), "{:.1f}"), fmt_num(num_or_null(tp, "tokens_per_s"), "{:.0f}"),
                        fmt_bytes(json(peak)), fmt_bytes(json(state_total)), fmt_bytes(num_or_null(s, "wire_bytes_per_step")),
                        fmt_num(num_or_null(s, "final_loss"), "{:.4f}")});
  if (tp.contains("samples_per_s") && tp.at("samples_per_s").is_number()) {
    auto& se = t.series[cr.strategy];
    se.name = cr.strategy;
    se.points.emplace_back(cr.nproc, tp.at("samples_per_s").get<double>());
  }
}

}  // namespace

BenchReport run_train_cells(const std::vector<Cell>& cells, const TrainBenchOptions& o, const CellRunner& run) {
  BenchReport r;
  r.table.headers = {"strategy", "nproc", "status", "step ms min/med/max", "samples/s", "tokens/s", "peak mem", "state/rank",
                     "wire/step", "final loss"};
  r.table.left = {true, false, true};
  const std::vector<CellRuns> by_cell = run_rounds(cells, o, run);
  Tally t;
  for (const auto& cr : by_cell) {
    json row = {{"strategy", cr.strategy}, {"nproc", cr.nproc}, {"work_dir", cr.work_dir}, {"command", cr.command}};
    if (!cr.error.empty() || cr.summaries.empty())
      add_failed_cell(cr, std::move(row), r.table, t);
    else
      add_measured_cell(cr, std::move(row), r.table, t);
  }
  r.notes.push_back(fmt::format("# {} interleaved round(s) x ({} warm-up + {} timed steps) per cell; step = min / median / max "
                                "over the rounds; state/rank = params + grads + optimizer bytes on the fullest rank; "
                                "wire/step = bytes each rank sends per training step",
                                o.rounds, o.warmup, o.steps));
  if (t.failed) r.notes.push_back(fmt::format("# {} of {} cell(s) failed; their logs are <work_dir>.log", t.failed, by_cell.size()));
  r.notes.insert(r.notes.end(), t.errors.begin(), t.errors.end());
  r.doc = {{"bench", "train"}, {"steps", o.steps}, {"warmup", o.warmup}, {"rounds", o.rounds}, {"rows", t.rows}, {"failed", t.failed}};
  r.plot.title = "mtrain bench train: throughput by strategy and world size";
  r.plot.xlabel = "ranks (nproc)";
  r.plot.ylabel = "samples/s";
  r.plot.logx = true;
  for (auto& [name, s] : t.series) r.plot.series.push_back(s);
  return r;
}

BenchReport run_train_bench(const TrainBenchOptions& o) {
  if (o.steps < 1) throw Error(fmt::format("--steps {} must be at least 1", o.steps));
  if (o.rounds < 1) throw Error(fmt::format("--rounds {} must be at least 1", o.rounds));
  if (o.warmup < 0) throw Error(fmt::format("--warmup {} must not be negative", o.warmup));
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

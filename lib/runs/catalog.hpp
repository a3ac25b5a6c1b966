#pragma once
// `mtrain runs`: what each run folder holds, read back from its files (run.json, metrics.jsonl,
// summary.json), and the table and JSON it is shown as.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::runs {

struct Run {
  std::string path;      // the run folder
  std::string name;      // work_dir/20261123_150401, relative to the listed folder
  std::string strategy, model;
  int world = 0;
  long long steps = 0, total_steps = 0;
  std::optional<double> final_loss, final_val;  // last train loss, last validation loss
  double duration_s = 0;
  std::string state;     // finished | stopped (SIGTERM) | running | failed
  std::vector<std::pair<double, double>> loss, val;  // (step, loss) curves from metrics.jsonl
};

// A run folder's contents. `alive(pid, host)` says whether the process that started an
// unfinished run still runs (only then is it "running", else "failed").
Run read_run(const std::string& folder, const std::string& name, bool (*alive)(long long pid, const std::string& host));

// Every run under `dir`: dir itself when it is a run folder, its run folders when it is a work
// dir, and those of its subfolders (a folder of work dirs). Oldest first. Throws mtrain::Error
// when dir does not exist.
std::vector<Run> list_runs(const std::string& dir);

// RUN arguments of `runs plot`: a run folder, or a work dir meaning its newest run.
Run resolve_run(const std::string& arg);

std::string runs_table(const std::vector<Run>& runs);
nlohmann::json runs_json(const std::vector<Run>& runs, bool with_curves);

// True when pid runs on this host (the default `alive`).
bool process_alive(long long pid, const std::string& host);

}  // namespace mtrain::runs

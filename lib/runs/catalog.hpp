#pragma once
// `mtrain runs`: what each run folder holds, read back from its files (run.json, metrics.jsonl,
// summary.json), and the table and JSON it is shown as.
//
// A work dir is untrusted input (copied from a cluster, unpacked from an archive): its files are
// opened without blocking and read only when they are regular files, within size limits
// (RunFileLimits), and every value is checked before it is used (a step count of 1e300 is not a
// step count). What cannot be read is named, never fatal for the other runs:
// * a file that is there but is not a regular file (a FIFO, /dev/zero behind a link, a socket, a
//   folder) or is larger than its limit: the run is skipped and named (list_runs' `skipped`);
// * a malformed metrics line (not JSON, not an object, a step that is not a whole number, a loss
//   that is not a number): the line is skipped and named as file:line in Run::warnings. A run whose
//   every line is bad is still listed (from run.json and summary.json, with no curve), since its
//   folder exists and says how it ended. An unterminated last line that is not JSON is skipped
//   silently: it is the line being written, or the one a crash cut. A `"loss": null` is how the
//   trainer writes a NaN loss: skipped silently too;
// * a run.json or summary.json that is not JSON, or a value of the wrong type or range: read as
//   absent, with a warning.
// Names and values keep their bytes in Run (they are data); runs_table and every warning make
// control characters visible (mtrain::visible_text), runs_json_text escapes them as JSON.
#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mtrain::runs {

// One launch's folder of a run that was resumed (lib/runs/segments.hpp joins them).
struct Segment {
  std::string name, path;
  long long start_step = 0, steps = 0;  // the step it resumed at (0: a fresh start) and the step it reached
};

struct Run {
  std::string path;      // the run folder
  std::string name;      // work_dir/20261123_150401, relative to the listed folder
  std::string strategy, model;
  int world = 0;
  long long steps = 0, total_steps = 0;
  long long start_step = 0;  // run.json's start_step: > 0 for a launch that resumed a checkpoint
  std::vector<Segment> segments;  // a resumed run's launches, oldest first (more than one), else empty
  std::optional<double> final_loss, final_val;  // last train loss, last validation loss
  double duration_s = 0;
  std::string state;     // finished | stopped (SIGTERM) | running | failed
  std::vector<std::pair<double, double>> loss, val;  // (step, loss) curves from metrics.jsonl
  std::vector<std::string> warnings;  // what was skipped while reading it ("<path>:7: …"), visible text
};

struct RunFileLimits {
  size_t max_json_bytes = 16u << 20;     // run.json, summary.json: a few KiB when the trainer writes them
  size_t max_metrics_bytes = 1u << 30;   // metrics.jsonl: ~250 bytes a logged step; only this much is read
  size_t max_line_bytes = 64u << 10;     // one metrics line: ~250 bytes
  size_t max_named_lines = 5;            // bad lines named one by one per file; the rest counted
};

// A run folder's contents. `alive(pid, host)` says whether the process that started an
// unfinished run still runs (only then is it "running", else "failed"). Throws mtrain::Error
// naming the file when one of its files is there but cannot be read (not a regular file, too
// large, unreadable): the run cannot be shown.
Run read_run(const std::string& folder, const std::string& name, bool (*alive)(long long pid, const std::string& host),
             const RunFileLimits& limits = {});

// Every run under `dir`: dir itself when it is a run folder, its run folders when it is a work
// dir, and those of its subfolders (a folder of work dirs), a resumed run's launches joined into
// one Run (join_segments). Oldest first. Throws mtrain::Error
// when dir does not exist. A run that read_run refuses is left out and its reason appended to
// *skipped (visible text) when given.
std::vector<Run> list_runs(const std::string& dir, std::vector<std::string>* skipped = nullptr);

// A RUN argument of `runs plot`: a run folder (that launch alone), or a work dir or folder of
// them meaning every run in it, as list_runs finds them (runs that cannot be read are skipped as
// in list_runs, and named in *skipped). A work dir holding one run names it by the argument.
std::vector<Run> resolve_runs(const std::string& arg, std::vector<std::string>* skipped = nullptr);

std::string runs_table(const std::vector<Run>& runs);
nlohmann::json runs_json(const std::vector<Run>& runs, bool with_curves);

// `j` as text for a person's terminal or a program: dump(indent), bytes that are not UTF-8
// replaced (U+FFFD; a folder name need not be UTF-8), DEL and the C1 controls written as
// \u escapes (JSON escapes only C0 itself) — the same value, never a raw control byte.
std::string runs_json_text(const nlohmann::json& j, int indent = 2);

// True when pid runs on this host (the default `alive`).
bool process_alive(long long pid, const std::string& host);

}  // namespace mtrain::runs

#pragma once
// Which MLflow run a job's rank 0 logs to, left for the launcher in a small file beside rank 0's
// TORCHELASTIC_ERROR_FILE (the launcher's own folder for that rank and attempt), so that the
// launcher can end the run when rank 0 could not: killed outright, or failed with a cause only
// the launcher's failure report names (issue 42; lib/launch/tracked_run.hpp).
#include <chrono>
#include <optional>
#include <string>

namespace mtrain::mlflow {

struct RunRecord {
  std::string uri;  // the tracking server, http://host:port[/path]
  std::string run_id;  // MLflow's run id (hex)
};

// The record's path for a rank's error file ("" when there is none: no launcher is listening).
std::string run_record_path(const std::string& error_file);

// Atomically (a reader sees nothing or the whole record; a planted link is never followed).
// False when it could not: tracking must not fail a run over this.
bool write_run_record(const std::string& path, const RunRecord& r) noexcept;

// nullopt when there is no such file or it is not a record (it is read bounded: 4 KB).
std::optional<RunRecord> read_run_record(const std::string& path);

// Ends a recorded run from outside rank 0: the tag mtrain.failure (when `failure_line` is not
// empty) and `status`; with `only_if_running`, a run whose status rank 0 set already is left as
// it is. Every call shares `budget` (three calls at most). Returns "" or what went wrong, in
// words.
std::string end_recorded_run(const RunRecord& r, const std::string& status, const std::string& failure_line,
                             bool only_if_running, std::chrono::milliseconds budget);

}  // namespace mtrain::mlflow

#pragma once
// What rank 0 of the bundled trainer hands its metrics to besides metrics.jsonl: TensorBoard
// event files and an MLflow run (docs/tracking.md). The loop calls log() with each metrics.jsonl
// record and end() once; neither waits on a server (MLflow runs in the background).
//
// A run's name is its run folder's (work_dir/<YYYYmmdd_HHMMSS>), except that a resumed run
// continues the run it resumes: it takes the name recorded in the previous run folder's run.json
// ("tracking_run", lineage_run_name), so TensorBoard shows one curve per training, not one per
// attempt, and the resumed file's START record drops the steps the earlier attempt logged past
// its checkpoint.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/tracking/event_file.hpp"
#include "lib/tracking/tracking_options.hpp"

namespace mtrain::tracking {

class MlflowRun;

// Checks log.mlflow.uri ("" when fine, else the problem in words).
std::string check_mlflow_uri(const std::string& uri);

// The name a run resumed in `work_dir` continues: the previous run's "tracking_run" from
// work_dir/latest/run.json, else that folder's name; "" when there is no previous run.
std::string lineage_run_name(const std::string& work_dir);

struct TrackedRun {
  std::string name;         // TensorBoard's subfolder, MLflow's default run name
  int64_t start_step = 0;   // > 0: resumed
  nlohmann::json job;       // the resolved job: a text summary and MLflow's parameters
  // Rank 0's TORCHELASTIC_ERROR_FILE: beside it the MLflow run's id is left for the launcher,
  // which ends the run when rank 0 cannot (mlflow/run_record.hpp); "" = no launcher.
  std::string error_file;
};

class Tracker {
 public:
  // Opens the event file (throws mtrain::Error when it cannot) and queues the MLflow run's
  // creation. `warn` prints one line (called from a background thread too).
  Tracker(const TrackingOptions& options, const TrackedRun& run, std::function<void(const std::string&)> warn);
  ~Tracker();

  // A metrics.jsonl record and any figures it does not hold (throughput).
  void log(const nlohmann::json& record, const std::vector<Scalar>& extra = {});
  // artifacts: (name, file) pairs for MLflow; message: a failure's first line; `waiting` is
  // called about once a second while MLflow's queue drains (the trainer's heartbeat).
  void end(RunEnd how, const std::string& message, const std::vector<std::pair<std::string, std::string>>& artifacts,
           const std::function<void()>& waiting = {});

 private:
  std::function<void(const std::string&)> warn_;
  std::unique_ptr<EventFileWriter> events_;
  std::unique_ptr<MlflowRun> mlflow_;
  bool events_failed_ = false;
};

}  // namespace mtrain::tracking

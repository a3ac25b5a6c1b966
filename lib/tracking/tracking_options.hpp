#pragma once
// What the job asks to track (log.tensorboard, log.mlflow.*), parsed once from the resolved job
// by the trainer's TrainJob, and how a run ended (MLflow's run status).
#include <string>
#include <utility>
#include <vector>

namespace mtrain::tracking {

struct TrackingOptions {
  std::string tensorboard_dir;    // log.tensorboard: event files under <dir>/<run>/; "" = none
  std::string mlflow_uri;         // log.mlflow.uri: http://host:port of a tracking server; "" = none
  std::string mlflow_experiment;  // log.mlflow.experiment: "" = MLflow's "Default"
  std::string mlflow_run_name;    // log.mlflow.run_name: "" = the run folder's name
  std::vector<std::pair<std::string, std::string>> mlflow_tags;  // log.mlflow.tags, key=value

  bool any() const { return !tensorboard_dir.empty() || !mlflow_uri.empty(); }
};

enum class RunEnd { Finished, Failed, Killed };

}  // namespace mtrain::tracking

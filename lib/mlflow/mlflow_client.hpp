#pragma once
// MLflow's tracking REST API (/api/2.0/mlflow/…) and its artifact proxy
// (/api/2.0/mlflow-artifacts/artifacts/…), one synchronous call each, every call with a timeout.
// Failures throw std::runtime_error with the server's own error_code and message.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/mlflow/http_client.hpp"

namespace mtrain::mlflow {

struct MlflowMetric {
  std::string key;
  double value = 0;
  int64_t timestamp_ms = 0;
  int64_t step = 0;
};

using KeyValues = std::vector<std::pair<std::string, std::string>>;

// MLflow's limits on one runs/log-batch request (its REST API reference, "Request Limits"):
// 1000 metrics, 100 params, 100 tags, 1000 items in all, 1 MB of JSON.
inline constexpr size_t kMetricsPerBatch = 1000;
inline constexpr size_t kParamsPerBatch = 100;
inline constexpr size_t kTagValueChars = 5000;  // the longest tag value every backend store keeps

// The tag that holds why a run FAILED: rank 0's own error line, replaced by the launcher's
// failure report's first line when the launcher reports (lib/launch/tracked_run.hpp).
inline constexpr const char* kFailureTag = "mtrain.failure";

struct MlflowRunRef {
  std::string run_id;
  std::string artifact_uri;  // mlflow-artifacts:/<experiment>/<run>/artifacts when the server proxies artifacts
};

class MlflowClient {
 public:
  MlflowClient(HttpUrl url, std::chrono::milliseconds timeout) : url_(std::move(url)), timeout_(timeout) {}

  // Each later call's timeout (a caller with a deadline shortens it as the deadline nears).
  void set_timeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

  // The experiment's id, created if no experiment has that name.
  std::string experiment_id(const std::string& name);
  MlflowRunRef create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms,
                          const KeyValues& tags);
  // At most MLflow's per-request limits (1000 metrics, 100 params); callers split.
  void log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics, const KeyValues& params,
                 const KeyValues& tags);
  void update_run(const std::string& run_id, const std::string& status, int64_t end_ms);
  // The run's status: "RUNNING", "FINISHED", "FAILED", "KILLED", "SCHEDULED".
  std::string run_status(const std::string& run_id);
  // PUT through the artifact proxy; `upload_timeout` bounds this call (large files need more).
  void upload_artifact(const MlflowRunRef& run, const std::string& file, const std::string& name,
                       std::chrono::milliseconds upload_timeout);

 private:
  std::string call(const std::string& method, const std::string& target, const std::string& body);

  HttpUrl url_;
  std::chrono::milliseconds timeout_;
};

// The artifact proxy's path for a run's artifact_uri ("mlflow-artifacts:/1/abc/artifacts" or
// "mlflow-artifacts://host:port/1/abc/artifacts" → "1/abc/artifacts"); "" for any other scheme
// (the server does not proxy artifacts).
std::string artifact_proxy_path(const std::string& artifact_uri);

}  // namespace mtrain::mlflow

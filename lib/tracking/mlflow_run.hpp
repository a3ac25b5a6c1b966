#pragma once
// One MLflow run fed from the training loop without ever holding it up: every call only queues
// (BoundedWorker, bounded), a background thread talks to the server with a timeout per call.
// When the server is down or too slow the first failure prints one warning, the run's metrics
// stay in metrics.jsonl, and calls are skipped for a while before the next try.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "mtrain/tracking/bounded_worker.hpp"
#include "mtrain/tracking/event_file.hpp"
#include "mtrain/tracking/http_client.hpp"
#include "mtrain/tracking/mlflow_client.hpp"
#include "mtrain/tracking/tracking_options.hpp"

namespace mtrain::tracking {

struct MlflowTimeouts {
  std::chrono::milliseconds call{10000};      // each REST call
  std::chrono::milliseconds retry_after{30000};  // calls skipped after a failure
  std::chrono::milliseconds finish_grace{30000};  // finish() waits at most this (+ uploads)
};

class MlflowRun {
 public:
  // Queues the run's creation and its parameters (the resolved job). `warn` gets the one warning
  // line, from the background thread.
  MlflowRun(const HttpUrl& url, const TrackingOptions& options, const std::string& run_name, const nlohmann::json& job,
            std::function<void(const std::string&)> warn, MlflowTimeouts timeouts = {});
  ~MlflowRun();

  void metrics(int64_t step, const std::vector<Scalar>& scalars);
  // Queues the artifacts (name → file) and the status, then waits for the queue a bounded time,
  // calling `waiting` about once a second meanwhile (BoundedWorker::stop).
  void finish(RunEnd end, const std::string& message, const std::vector<std::pair<std::string, std::string>>& artifacts,
              const std::function<void()>& waiting = {});

 private:
  void attempt(const std::string& what, const std::function<void()>& call);
  void ensure_created();

  MlflowClient client_;
  MlflowTimeouts timeouts_;
  std::function<void(const std::string&)> warn_;
  std::string uri_;
  std::string experiment_, run_name_;
  KeyValues tags_, params_;
  int64_t start_ms_ = 0;
  MlflowRunRef run_;  // written and read on the worker thread only
  bool created_ = false;
  std::chrono::steady_clock::time_point skip_until_{};
  std::atomic<bool> warned_{false};
  bool finished_ = false;
  std::unique_ptr<BoundedWorker> worker_;  // last: stopped first, before the state its tasks use
};

}  // namespace mtrain::tracking

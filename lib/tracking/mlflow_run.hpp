#pragma once
// One MLflow run fed from the training loop without ever holding it up: every call only queues
// (bounded), a background thread talks to the server with a timeout per call. When the server is
// down or too slow the first failure prints one warning, the run's metrics stay in
// metrics.jsonl, and calls are skipped for a while before the next try.
//
// Metric points are not one request each: they wait in one bounded buffer that the background
// thread sends as runs/log-batch requests of up to 1000 points, so a backlog of thousands of
// logging steps goes out in a few requests. At the end the points still waiting get a bounded
// share of the time, and the artifacts and the final status always come after them, never
// dropped behind them.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/mlflow/http_client.hpp"
#include "lib/mlflow/mlflow_client.hpp"
#include "lib/tracking/bounded_worker.hpp"
#include "lib/tracking/event_file.hpp"
#include "lib/tracking/tracking_options.hpp"

namespace mtrain::tracking {

struct MlflowTimeouts {
  std::chrono::milliseconds call{10000};  // each REST call
  std::chrono::milliseconds retry_after{30000};  // calls skipped after a failure
  // finish() spends at most this on metric points still waiting; the artifacts (each with its
  // own deadline) and the status come after, whatever is left.
  std::chrono::milliseconds finish_grace{30000};
};

class MlflowRun {
 public:
  // Queues the run's creation and its parameters (the resolved job). `warn` gets the one warning
  // line, from the background thread. `record_file`: where the run's id is left for the
  // launcher once the run exists (mlflow/run_record.hpp); "" = nowhere.
  MlflowRun(const mlflow::HttpUrl& url, const TrackingOptions& options, const std::string& run_name,
            const nlohmann::json& job, std::function<void(const std::string&)> warn, MlflowTimeouts timeouts = {},
            std::string record_file = "");
  ~MlflowRun();

  void metrics(int64_t step, const std::vector<Scalar>& scalars);
  // Sends the points still waiting (for finish_grace at most), then the artifacts (name → file)
  // and the status, calling `waiting` about once a second meanwhile (BoundedWorker::stop).
  void finish(RunEnd end, const std::string& message, const std::vector<std::pair<std::string, std::string>>& artifacts,
              const std::function<void()>& waiting = {});
  // Points never sent: the buffer was full, the time at the end ran out, or a call failed.
  int64_t dropped_points() const;

 private:
  // Runs `call` unless calls are being skipped after a failure; false when skipped or it failed.
  bool attempt(const std::string& what, const std::function<void()>& call);
  void ensure_created();
  // Worker thread: sends waiting points in batches until none is left or `deadline` passes.
  void send_points(std::chrono::steady_clock::time_point deadline);

  mlflow::MlflowClient client_;
  MlflowTimeouts timeouts_;
  std::function<void(const std::string&)> warn_;
  std::string uri_;
  std::string experiment_, run_name_;
  mlflow::KeyValues tags_, params_;
  int64_t start_ms_ = 0;
  std::string record_file_;
  mlflow::MlflowRunRef run_;  // written and read on the worker thread only
  bool created_ = false;
  std::chrono::steady_clock::time_point skip_until_{};
  std::atomic<bool> warned_{false};
  bool finished_ = false;

  mutable std::mutex points_mu_;  // guards the three below, shared by the loop and the worker
  std::deque<mlflow::MlflowMetric> points_;
  bool send_queued_ = false;  // a send task is queued and will take what is in points_
  int64_t dropped_points_ = 0;
  // Set by finish(): a send task that is draining stops here, so the final task is not delayed.
  std::atomic<std::chrono::steady_clock::rep> send_until_{
      std::chrono::steady_clock::time_point::max().time_since_epoch().count()};

  std::unique_ptr<BoundedWorker> worker_;  // last: stopped first, before the state its tasks use
};

}  // namespace mtrain::tracking

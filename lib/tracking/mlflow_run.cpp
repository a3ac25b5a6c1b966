#include "lib/tracking/mlflow_run.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "lib/mlflow/run_record.hpp"
#include "lib/tracking/scalars.hpp"

namespace mtrain::tracking {

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Metric points held while the server is slower than the loop: ~5000 logging steps of ~10
// figures, a few MB at most. Beyond it new points are dropped (and counted).
constexpr size_t kMaxPoints = 50000;
// Tasks, not points: the run's creation, one send task at a time, the final task.
constexpr size_t kQueueTasks = 64;

const char* status_name(RunEnd e) {
  switch (e) {
    case RunEnd::Finished: return "FINISHED";
    case RunEnd::Failed: return "FAILED";
    case RunEnd::Killed: return "KILLED";
  }
  return "FAILED";
}

}  // namespace

MlflowRun::MlflowRun(const mlflow::HttpUrl& url, const TrackingOptions& options, const std::string& run_name,
                     const nlohmann::json& job, std::function<void(const std::string&)> warn, MlflowTimeouts timeouts,
                     std::string record_file)
    : client_(url, timeouts.call), timeouts_(timeouts), warn_(std::move(warn)), uri_(options.mlflow_uri),
      record_file_(std::move(record_file)), worker_(std::make_unique<BoundedWorker>(kQueueTasks)) {
  experiment_ = options.mlflow_experiment.empty() ? "Default" : options.mlflow_experiment;
  run_name_ = run_name;
  tags_ = options.mlflow_tags;
  tags_.emplace_back("mlflow.source.name", "mtrain");
  params_ = params_of_job(job);
  start_ms_ = now_ms();
  worker_->push([this] { attempt("creating the run", [&] { ensure_created(); }); });
}

// Creates the run and logs its parameters the first time a call gets through, so a server that
// comes up after the start still gets the run (from its next logging step on).
void MlflowRun::ensure_created() {
  if (created_) return;
  run_ = client_.create_run(client_.experiment_id(experiment_), run_name_, start_ms_, tags_);
  created_ = true;
  // Told to the launcher at once: rank 0 may be killed before its next call.
  if (!record_file_.empty()) mlflow::write_run_record(record_file_, {uri_, run_.run_id});
  for (size_t i = 0; i < params_.size(); i += mlflow::kParamsPerBatch) {
    const mlflow::KeyValues part(
        params_.begin() + static_cast<std::ptrdiff_t>(i),
        params_.begin() + static_cast<std::ptrdiff_t>(std::min(params_.size(), i + mlflow::kParamsPerBatch)));
    client_.log_batch(run_.run_id, {}, part, {});
  }
}

MlflowRun::~MlflowRun() {
  if (!finished_) finish(RunEnd::Failed, "the trainer ended without reporting how", {});
}

void MlflowRun::metrics(int64_t step, const std::vector<Scalar>& scalars) {
  const int64_t t = now_ms();
  bool queue_send = false;
  {
    std::lock_guard<std::mutex> lock(points_mu_);
    if (points_.size() + scalars.size() > kMaxPoints) {
      dropped_points_ += static_cast<int64_t>(scalars.size());
    } else {
      for (const Scalar& s : scalars) points_.push_back({s.tag, s.value, t, step});
    }
    queue_send = !send_queued_ && !points_.empty();
    if (queue_send) send_queued_ = true;
  }
  if (!queue_send) return;
  const bool queued = worker_->push([this] {
    {
      std::lock_guard<std::mutex> lock(points_mu_);
      send_queued_ = false;  // points that come while this task sends queue the next one
    }
    send_points(Clock::time_point::max());
  });
  if (!queued) {  // the queue is full or stopped: the points wait for the next step's try
    std::lock_guard<std::mutex> lock(points_mu_);
    send_queued_ = false;
  }
}

void MlflowRun::send_points(Clock::time_point deadline) {
  for (;;) {
    const Clock::time_point until =
        std::min(deadline, Clock::time_point(Clock::duration(send_until_.load(std::memory_order_relaxed))));
    if (Clock::now() >= until) return;
    std::vector<mlflow::MlflowMetric> batch;
    {
      std::lock_guard<std::mutex> lock(points_mu_);
      const size_t n = std::min(points_.size(), mlflow::kMetricsPerBatch);
      if (n == 0) return;
      batch.assign(std::make_move_iterator(points_.begin()),
                   std::make_move_iterator(points_.begin() + static_cast<std::ptrdiff_t>(n)));
      points_.erase(points_.begin(), points_.begin() + static_cast<std::ptrdiff_t>(n));
    }
    const bool sent = attempt("logging metrics", [&] {
      ensure_created();
      client_.log_batch(run_.run_id, batch, {}, {});
    });
    if (!sent) {
      std::lock_guard<std::mutex> lock(points_mu_);
      dropped_points_ += static_cast<int64_t>(batch.size());
    }
  }
}

void MlflowRun::finish(RunEnd end, const std::string& message,
                       const std::vector<std::pair<std::string, std::string>>& artifacts,
                       const std::function<void()>& waiting) {
  if (finished_) return;
  finished_ = true;
  const auto metrics_until = Clock::now() + timeouts_.finish_grace;
  send_until_.store(metrics_until.time_since_epoch().count(), std::memory_order_relaxed);
  // Waiting points, then the creation if it has not happened, the tag, the status: each call
  // may take up to twice its timeout (http_client.hpp), and a send may be under way already.
  auto grace = timeouts_.finish_grace + 12 * timeouts_.call;
  struct Upload {
    std::string name, file;
    std::chrono::milliseconds limit;
  };
  std::vector<Upload> uploads;
  for (const auto& [name, file] : artifacts) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(file, ec);
    if (ec) continue;
    // The upload's own deadline allows 1 MB/s beyond the call timeout.
    const auto limit = timeouts_.call + std::chrono::milliseconds(bytes / 1000);
    grace += 2 * limit;
    uploads.push_back({name, file, limit});
  }
  worker_->push([this, metrics_until, uploads = std::move(uploads), status = std::string(status_name(end)), message] {
    send_points(metrics_until);
    int64_t left = 0;
    {
      std::lock_guard<std::mutex> lock(points_mu_);
      left = static_cast<int64_t>(points_.size());
      dropped_points_ += left;
      points_.clear();
    }
    if (left > 0 && Clock::now() >= skip_until_ && !warned_.exchange(true)) {
      warn_(
          fmt::format("warning: MLflow server {}: {} metric points were not sent within {:g} s at the end; "
                      "metrics.jsonl has them",
                      uri_, left, std::chrono::duration<double>(timeouts_.finish_grace).count()));
    }
    for (const Upload& u : uploads) {
      attempt("uploading " + u.name, [&] {
        ensure_created();
        client_.upload_artifact(run_, u.file, u.name, u.limit);
      });
    }
    attempt("setting the run's status", [&] {
      ensure_created();
      if (!message.empty())
        client_.log_batch(run_.run_id, {}, {}, {{mlflow::kFailureTag, message.substr(0, mlflow::kTagValueChars)}});
      client_.update_run(run_.run_id, status, now_ms());
    });
  });
  worker_->stop(grace, waiting);
}

int64_t MlflowRun::dropped_points() const {
  std::lock_guard<std::mutex> lock(points_mu_);
  return dropped_points_;
}

bool MlflowRun::attempt(const std::string& what, const std::function<void()>& call) {
  if (Clock::now() < skip_until_) return false;
  try {
    call();
    return true;
  } catch (const std::exception& e) {
    skip_until_ = Clock::now() + timeouts_.retry_after;
    if (!warned_.exchange(true)) {
      warn_(fmt::format("warning: MLflow server {}: {} failed ({}); training goes on and its metrics stay in "
                        "metrics.jsonl; further MLflow failures of this run are not reported",
                        uri_, what, e.what()));
    }
    return false;
  }
}

}  // namespace mtrain::tracking

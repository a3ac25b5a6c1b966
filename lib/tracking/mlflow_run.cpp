#include "mtrain/tracking/mlflow_run.hpp"

#include <filesystem>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "mtrain/tracking/scalars.hpp"

namespace mtrain::tracking {

namespace {

using Clock = std::chrono::steady_clock;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Queued items, not bytes: a logging step is one item, so this is thousands of logging steps
// held while a server is slow, and a few MB at most.
constexpr size_t kQueueItems = 4096;
constexpr size_t kParamsPerBatch = 100;  // MLflow's log-batch limit
constexpr size_t kMetricsPerBatch = 1000;

const char* status_name(RunEnd e) {
  switch (e) {
    case RunEnd::Finished: return "FINISHED";
    case RunEnd::Failed: return "FAILED";
    case RunEnd::Killed: return "KILLED";
  }
  return "FAILED";
}

}  // namespace

MlflowRun::MlflowRun(const HttpUrl& url, const TrackingOptions& options, const std::string& run_name,
                     const nlohmann::json& job, std::function<void(const std::string&)> warn, MlflowTimeouts timeouts)
    : client_(url, timeouts.call),
      timeouts_(timeouts),
      warn_(std::move(warn)),
      uri_(options.mlflow_uri),
      worker_(std::make_unique<BoundedWorker>(kQueueItems)) {
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
  for (size_t i = 0; i < params_.size(); i += kParamsPerBatch) {
    const KeyValues part(params_.begin() + static_cast<std::ptrdiff_t>(i),
                         params_.begin() + static_cast<std::ptrdiff_t>(std::min(params_.size(), i + kParamsPerBatch)));
    client_.log_batch(run_.run_id, {}, part, {});
  }
}

MlflowRun::~MlflowRun() {
  if (!finished_) finish(RunEnd::Failed, "the trainer ended without reporting how", {});
}

void MlflowRun::metrics(int64_t step, const std::vector<Scalar>& scalars) {
  std::vector<MlflowMetric> m;
  m.reserve(scalars.size());
  const int64_t t = now_ms();
  for (const Scalar& s : scalars) m.push_back({s.tag, s.value, t, step});
  for (size_t i = 0; i < m.size(); i += kMetricsPerBatch) {
    std::vector<MlflowMetric> part(m.begin() + static_cast<std::ptrdiff_t>(i),
                                   m.begin() + static_cast<std::ptrdiff_t>(std::min(m.size(), i + kMetricsPerBatch)));
    worker_->push([this, part = std::move(part)] {
      attempt("logging metrics", [&] {
        ensure_created();
        client_.log_batch(run_.run_id, part, {}, {});
      });
    });
  }
}

void MlflowRun::finish(RunEnd end, const std::string& message,
                       const std::vector<std::pair<std::string, std::string>>& artifacts,
                       const std::function<void()>& waiting) {
  if (finished_) return;
  finished_ = true;
  auto grace = timeouts_.finish_grace;
  for (const auto& [name, file] : artifacts) {
    std::error_code ec;
    const auto bytes = std::filesystem::file_size(file, ec);
    if (ec) continue;
    // The upload's own deadline allows 1 MB/s beyond the call timeout.
    const auto limit = timeouts_.call + std::chrono::milliseconds(bytes / 1000);
    grace += limit;
    worker_->push([this, name = name, file = file, limit] {
      attempt("uploading " + name, [&] {
        ensure_created();
        client_.upload_artifact(run_, file, name, limit);
      });
    });
  }
  const std::string status = status_name(end);
  worker_->push([this, status, message] {
    attempt("setting the run's status", [&] {
      ensure_created();
      if (!message.empty()) client_.log_batch(run_.run_id, {}, {}, {{"mtrain.failure", message}});
      client_.update_run(run_.run_id, status, now_ms());
    });
  });
  worker_->stop(grace, waiting);
}

void MlflowRun::attempt(const std::string& what, const std::function<void()>& call) {
  if (Clock::now() < skip_until_) return;
  try {
    call();
  } catch (const std::exception& e) {
    skip_until_ = Clock::now() + timeouts_.retry_after;
    if (!warned_.exchange(true)) {
      warn_(fmt::format("warning: MLflow server {}: {} failed ({}); training goes on and its metrics stay in "
                        "metrics.jsonl; further MLflow failures of this run are not reported",
                        uri_, what, e.what()));
    }
  }
}

}  // namespace mtrain::tracking

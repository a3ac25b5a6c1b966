#include "lib/tracking/tracker.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/run_folder.hpp"
#include "lib/mlflow/http_client.hpp"
#include "lib/mlflow/run_record.hpp"
#include "lib/tracking/mlflow_run.hpp"
#include "lib/tracking/scalars.hpp"

namespace mtrain::tracking {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string check_mlflow_uri(const std::string& uri) {
  if (uri.empty()) return "";
  mlflow::HttpUrl url;
  return mlflow::parse_http_url(uri, url);
}

std::string lineage_run_name(const std::string& work_dir) {
  std::error_code ec;
  const fs::path latest = fs::read_symlink(fs::path(work_dir) / "latest", ec);
  if (ec || !runs::is_run_folder_name(latest.filename().string())) return "";
  std::ifstream in(fs::path(work_dir) / latest.filename() / "run.json");
  std::string text(4096, '\0');  // run.json is a few lines: a larger one is not ours
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  const json info = json::parse(text, nullptr, false);
  if (info.is_object() && info.contains("tracking_run") && info["tracking_run"].is_string() &&
      runs::is_run_folder_name(info["tracking_run"].get<std::string>())) {
    return info["tracking_run"].get<std::string>();
  }
  return latest.filename().string();
}

Tracker::Tracker(const TrackingOptions& options, const TrackedRun& run, std::function<void(const std::string&)> warn)
    : warn_(std::move(warn)) {
  const double now = wall_time();
  if (!options.tensorboard_dir.empty()) {
    events_ = std::make_unique<EventFileWriter>(options.tensorboard_dir + "/" + run.name, now);
    if (run.start_step > 0) events_->session_start(run.start_step + 1, now);
    events_->text("job", run.start_step, now, job_markdown(run.job));
  }
  if (!options.mlflow_uri.empty()) {
    mlflow::HttpUrl url;
    if (const std::string why = mlflow::parse_http_url(options.mlflow_uri, url); !why.empty()) {
      throw Error(fmt::format("log.mlflow.uri '{}': {}", options.mlflow_uri, why),
                  "give the tracking server's address as http://HOST:PORT (mlflow server --host HOST --port PORT)");
    }
    mlflow_ =
        std::make_unique<MlflowRun>(url, options, options.mlflow_run_name.empty() ? run.name : options.mlflow_run_name,
                                    run.job, warn_, MlflowTimeouts{}, mlflow::run_record_path(run.error_file));
  }
}

Tracker::~Tracker() = default;

void Tracker::log(const json& record, const std::vector<Scalar>& extra) {
  std::vector<Scalar> s = scalars_of_record(record);
  s.insert(s.end(), extra.begin(), extra.end());
  const int64_t step = record.value("step", int64_t{0});
  if (events_ && !events_failed_) {
    events_->scalars(step, wall_time(), s);
    if (!events_->good()) {
      events_failed_ = true;
      warn_(fmt::format("warning: cannot write {} (disk full?); TensorBoard shows this run up to step {}, "
                        "metrics.jsonl has the rest",
                        events_->path(), step));
    }
  }
  if (mlflow_) mlflow_->metrics(step, s);
}

void Tracker::end(RunEnd how, const std::string& message,
                  const std::vector<std::pair<std::string, std::string>>& artifacts,
                  const std::function<void()>& waiting) {
  if (mlflow_) mlflow_->finish(how, message, artifacts, waiting);
}

}  // namespace mtrain::tracking

#include "lib/launch/tracked_run.hpp"

#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "lib/core/visible_text.hpp"
#include "lib/mlflow/run_record.hpp"

namespace mtrain::launch {

void end_tracked_run(const plan::LaunchPlan& plan, const std::string& error_file_dir, int attempt, TrackedEnd how,
                     const std::string& report_first_line, std::chrono::milliseconds budget) {
  if (error_file_dir.empty()) return;
  const plan::Worker* rank0 = nullptr;
  for (const auto& n : plan.nodes)
    for (const auto& w : n.workers)
      if (w.rank == 0) rank0 = &w;
  if (!rank0) return;
  const auto env = plan::attempt_env(*rank0, attempt, error_file_dir);
  const auto error_file = env.find("TORCHELASTIC_ERROR_FILE");
  if (error_file == env.end()) return;
  const std::optional<mlflow::RunRecord> run = mlflow::read_run_record(mlflow::run_record_path(error_file->second));
  if (!run) return;
  const bool failed = how == TrackedEnd::Failed;
  const std::string why =
      mlflow::end_recorded_run(*run, failed ? "FAILED" : "KILLED", failed ? report_first_line : "", !failed, budget);
  if (!why.empty())
    std::fprintf(stderr,
                 "mtrain: warning: could not mark MLflow run %s on %s as %s (%s); its status there may stay RUNNING\n",
                 run->run_id.c_str(), run->uri.c_str(), failed ? "FAILED" : "KILLED", visible_text(why).c_str());
}

}  // namespace mtrain::launch

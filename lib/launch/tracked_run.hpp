#pragma once
// The job's MLflow run, ended by the launcher (issue 42): rank 0 logs to it and sets its status
// itself when it can, but a rank 0 killed outright leaves it RUNNING, and only the launcher's
// failure report names the root cause across ranks. So once every rank of the attempt has
// exited, the launcher reads the run rank 0 recorded (mlflow/run_record.hpp) and sets FAILED
// with the report's first line as the tag mtrain.failure, or KILLED after a stop signal when
// rank 0 left the run RUNNING. Bounded by a few seconds; never fails the launcher: a problem is
// one line on stderr.
#include <chrono>
#include <string>

#include "lib/plan/plan.hpp"

namespace mtrain::launch {

enum class TrackedEnd {
  Failed,  // FAILED, with the failure report's first line
  Killed,  // KILLED, unless rank 0 already set a status
};

inline constexpr std::chrono::milliseconds kTrackedRunBudget{5000};

// Does nothing when rank 0 is not in `plan` (another node's launcher reports) or recorded no
// run (no log.mlflow.uri, or the run was never created).
void end_tracked_run(const plan::LaunchPlan& plan, const std::string& error_file_dir, int attempt, TrackedEnd how,
                     const std::string& report_first_line, std::chrono::milliseconds budget = kTrackedRunBudget);

}  // namespace mtrain::launch

// The launcher ends the MLflow run rank 0 recorded: FAILED with the report's first line, KILLED
// only when rank 0 left it RUNNING, nothing when rank 0 is on another node or recorded nothing.
#include <catch2/catch.hpp>

#include <filesystem>

#include "fakes/fake_mlflow_server.hpp"
#include "lib/launch/tracked_run.hpp"
#include "lib/mlflow/run_record.hpp"
#include "temp_dir.hpp"

using namespace mtrain;
using namespace mtrain::launch;
using mtrain::testing::FakeMlflowServer;

namespace {

plan::LaunchPlan plan_with_ranks(const std::vector<int>& ranks) {
  plan::LaunchPlan p;
  p.job_id = "j";
  p.nodes.push_back(plan::Node{"node-a", 0, {}, {}});
  for (int r : ranks) p.nodes[0].workers.push_back(plan::Worker{r, r, std::nullopt, {}, {}});
  return p;
}

// Rank 0's record as the tracker leaves it for `attempt`.
void record(const std::string& dir, int attempt, const std::string& uri) {
  const plan::LaunchPlan p = plan_with_ranks({0});
  const std::string error_file = plan::attempt_env(p.nodes[0].workers[0], attempt, dir).at("TORCHELASTIC_ERROR_FILE");
  std::filesystem::create_directories(std::filesystem::path(error_file).parent_path());
  REQUIRE(mlflow::write_run_record(mlflow::run_record_path(error_file), {uri, FakeMlflowServer::kRunId}));
}

}  // namespace

TEST_CASE("a failed job's run ends FAILED with the report's first line", "[launch][tracked_run]") {
  FakeMlflowServer server;
  mtrain::testing::TempDir dir;
  record(dir.path.string(), 1, server.uri());
  server.set_status("FAILED");  // rank 0 set it, with its own error line
  end_tracked_run(plan_with_ranks({0, 1}), dir.path.string(), 1, TrackedEnd::Failed,
                  "mtrain: job j failed on attempt 1 (max restarts 1)");
  CHECK(server.status() == "FAILED");
  CHECK(server.tags().at("mtrain.failure") == "mtrain: job j failed on attempt 1 (max restarts 1)");
}

TEST_CASE("a stopped job's run ends KILLED only when rank 0 could not end it", "[launch][tracked_run]") {
  FakeMlflowServer server;
  mtrain::testing::TempDir dir;
  record(dir.path.string(), 0, server.uri());
  server.set_status("RUNNING");
  end_tracked_run(plan_with_ranks({0}), dir.path.string(), 0, TrackedEnd::Killed, "");
  CHECK(server.status() == "KILLED");
  server.set_status("FINISHED");
  end_tracked_run(plan_with_ranks({0}), dir.path.string(), 0, TrackedEnd::Killed, "");
  CHECK(server.status() == "FINISHED");
  CHECK(server.tags().empty());
}

TEST_CASE("no record, or rank 0 on another node: the server is not called", "[launch][tracked_run]") {
  FakeMlflowServer server;
  mtrain::testing::TempDir dir;
  end_tracked_run(plan_with_ranks({0}), dir.path.string(), 0, TrackedEnd::Failed, "line");  // nothing recorded
  record(dir.path.string(), 0, server.uri());
  end_tracked_run(plan_with_ranks({2, 3}), dir.path.string(), 0, TrackedEnd::Failed, "line");
  end_tracked_run(plan_with_ranks({0}), dir.path.string(), 1, TrackedEnd::Failed, "line");  // another attempt's
  CHECK(server.events().empty());
}

// The tracked run's name: a resumed run continues the name its previous run folder recorded.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "lib/core/error.hpp"
#include "lib/tracking/tracker.hpp"
#include "temp_dir.hpp"

using namespace mtrain::tracking;
namespace fs = std::filesystem;

TEST_CASE("a resumed run continues its training's tracked run", "[tracking][tracker]") {
  mtrain::testing::TempDir tmp;
  const std::string wd = tmp.str();
  CHECK(lineage_run_name(wd).empty());  // no run yet
  fs::create_directories(wd + "/20261128_031500");
  std::ofstream(wd + "/20261128_031500/run.json") << R"({"started": 1})";
  fs::create_symlink("20261128_031500", wd + "/latest");
  CHECK(lineage_run_name(wd) == "20261128_031500");  // the first resume: the first run's name
  fs::create_directories(wd + "/20261128_032000");
  std::ofstream(wd + "/20261128_032000/run.json") << R"({"tracking_run": "20261128_031500"})";
  fs::remove(wd + "/latest");
  fs::create_symlink("20261128_032000", wd + "/latest");
  CHECK(lineage_run_name(wd) == "20261128_031500");  // and every later one
  // A recorded name that is no run folder's name is not used as a path.
  std::ofstream(wd + "/20261128_032000/run.json") << R"({"tracking_run": "../../etc"})";
  CHECK(lineage_run_name(wd) == "20261128_032000");
}

TEST_CASE("an https or malformed MLflow URI is refused when tracking starts", "[tracking][tracker]") {
  TrackingOptions o;
  o.mlflow_uri = "https://mlflow.example";
  CHECK_THROWS_WITH(
      Tracker(o, {"r", 0, {}, ""}, [](const std::string&) {}),
      Catch::Contains("log.mlflow.uri 'https://mlflow.example'") && Catch::Contains("https is not supported"));
  CHECK_THAT(check_mlflow_uri("http://127.0.0.1:5000"), Catch::Equals(""));
}

// The artifact proxy's path for a run's artifact_uri.
#include <catch2/catch.hpp>

#include "lib/mlflow/mlflow_client.hpp"

using namespace mtrain::mlflow;

TEST_CASE("a run's artifact_uri maps to the artifact proxy's path", "[mlflow][mlflow_client]") {
  CHECK(artifact_proxy_path("mlflow-artifacts:/1/abc/artifacts") == "1/abc/artifacts");
  CHECK(artifact_proxy_path("mlflow-artifacts://127.0.0.1:5000/1/abc/artifacts") == "1/abc/artifacts");
  CHECK(artifact_proxy_path("file:///tmp/mlruns/1/abc/artifacts").empty());
  CHECK(artifact_proxy_path("s3://bucket/1/abc").empty());
}

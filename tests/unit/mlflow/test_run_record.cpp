// The record rank 0 leaves for the launcher, and the launcher's end of a recorded run against a
// server that answers as MLflow does (tests/fakes/fake_mlflow_server.hpp).
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "fakes/fake_mlflow_server.hpp"
#include "lib/mlflow/run_record.hpp"
#include "temp_dir.hpp"

using namespace mtrain::mlflow;
using namespace std::chrono_literals;
using mtrain::testing::FakeMlflowServer;
using Clock = std::chrono::steady_clock;

TEST_CASE("a run record is written beside the error file and read back", "[mlflow][run_record]") {
  mtrain::testing::TempDir dir;
  CHECK(run_record_path("").empty());
  const std::string path = run_record_path((dir.path / "attempt_0/0/error.json").string());
  CHECK(path == (dir.path / "attempt_0/0/mlflow_run.json").string());
  std::filesystem::create_directories(dir.path / "attempt_0/0");
  REQUIRE(write_run_record(path, {"http://127.0.0.1:5000", "0123abcd"}));
  const auto r = read_run_record(path);
  REQUIRE(r.has_value());
  CHECK(r->uri == "http://127.0.0.1:5000");
  CHECK(r->run_id == "0123abcd");
  CHECK_FALSE(write_run_record((dir.path / "no/such/folder/mlflow_run.json").string(), {"http://h:1", "ab"}));
}

TEST_CASE("what is not a run record is ignored", "[mlflow][run_record]") {
  mtrain::testing::TempDir dir;
  const auto write = [&](const std::string& text) {
    std::ofstream((dir.path / "r.json").string()) << text;
    return read_run_record((dir.path / "r.json").string());
  };
  CHECK_FALSE(read_run_record((dir.path / "absent.json").string()).has_value());
  CHECK_FALSE(write("not json").has_value());
  CHECK_FALSE(write(R"({"uri": "file:///tmp/mlruns", "run_id": "ab"})").has_value());
  CHECK_FALSE(write(R"({"uri": "http://h:1", "run_id": "../../etc"})").has_value());
  CHECK_FALSE(write(R"({"uri": "http://h:1"})").has_value());
  CHECK_FALSE(write(R"({"uri": "http://h:1", "run_id": "ab", "pad": ")" + std::string(5000, 'x') + "\"}").has_value());
  CHECK_FALSE(read_run_record("/dev/zero").has_value());
}

TEST_CASE("the launcher ends a recorded run FAILED with its line, KILLED only when still RUNNING",
          "[mlflow][run_record]") {
  FakeMlflowServer server;
  const RunRecord r{server.uri(), FakeMlflowServer::kRunId};
  server.set_status("RUNNING");
  CHECK(end_recorded_run(r, "KILLED", "", true, 2s).empty());
  CHECK(server.status() == "KILLED");
  server.set_status("FINISHED");
  CHECK(end_recorded_run(r, "KILLED", "", true, 2s).empty());
  CHECK(server.status() == "FINISHED");  // rank 0 had set it: left alone
  CHECK(end_recorded_run(r, "FAILED", "mtrain: job j failed on attempt 0 (max restarts 0)", false, 2s).empty());
  CHECK(server.status() == "FAILED");
  CHECK(server.tags().at("mtrain.failure") == "mtrain: job j failed on attempt 0 (max restarts 0)");
}

TEST_CASE("ending a recorded run on a server that never answers takes its budget, no more", "[mlflow][run_record]") {
  boost::asio::io_context io;
  boost::asio::ip::tcp::acceptor silent(io, {boost::asio::ip::make_address("127.0.0.1"), 0});  // never reads
  const RunRecord r{"http://127.0.0.1:" + std::to_string(silent.local_endpoint().port()), "ab"};
  const auto t0 = Clock::now();
  const std::string why = end_recorded_run(r, "FAILED", "line", false, 600ms);
  CHECK(Clock::now() - t0 < 1500ms);
  CHECK_THAT(why, Catch::Contains("no answer within") || Catch::Contains("no time left"));
}

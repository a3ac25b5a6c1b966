// An MLflow server that is down or never answers costs the training loop nothing: every call
// returns at once, there is one warning, and finishing waits a bounded time. A backlog of metric
// points goes out in log-batch requests of up to 1000, and the artifacts and the final status
// always come after it. (The real server is tests/e2e/tracking/test_mlflow.sh.)
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "fakes/fake_mlflow_server.hpp"
#include "lib/mlflow/http_client.hpp"
#include "lib/mlflow/run_record.hpp"
#include "lib/tracking/mlflow_run.hpp"
#include "temp_dir.hpp"

using namespace mtrain::tracking;
using mtrain::mlflow::HttpUrl;
using mtrain::mlflow::parse_http_url;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

struct Warnings {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& l) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(l);
    };
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu);
    return lines.size();
  }
};

// Trains "steps": 500 logging calls, each must return at once.
double log_steps(MlflowRun& run) {
  const auto t0 = Clock::now();
  for (int step = 1; step <= 500; ++step) run.metrics(step, {{"train/loss", 1.0 / step}, {"train/lr", 1e-3}});
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

MlflowTimeouts short_timeouts() {
  MlflowTimeouts t;
  t.call = 300ms;
  t.retry_after = 60s;
  t.finish_grace = 1s;
  return t;
}

}  // namespace

TEST_CASE("a server that is down: one warning, no wait", "[tracking][mlflow_run]") {
  asio::io_context io;
  std::string port;
  {  // a port that was free a moment ago and has no listener now
    asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
    port = std::to_string(a.local_endpoint().port());
  }
  HttpUrl url;
  REQUIRE(parse_http_url("http://127.0.0.1:" + port, url).empty());
  TrackingOptions o;
  o.mlflow_uri = "http://127.0.0.1:" + port;
  Warnings w;
  const auto t0 = Clock::now();
  {
    MlflowRun run(url, o, "r", {{"train", {{"max_steps", 5}}}}, w.sink(), short_timeouts());
    CHECK(log_steps(run) < 0.5);
    run.finish(RunEnd::Finished, "", {});
  }
  CHECK(Clock::now() - t0 < 5s);
  REQUIRE(w.count() == 1);
  CHECK_THAT(w.lines[0], Catch::Contains("MLflow server http://127.0.0.1:" + port) &&
                             Catch::Contains("metrics stay in metrics.jsonl"));
}

TEST_CASE("a server that accepts and never answers: calls time out in the background", "[tracking][mlflow_run]") {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});  // listens, never reads
  const std::string uri = "http://127.0.0.1:" + std::to_string(silent.local_endpoint().port());
  HttpUrl url;
  REQUIRE(parse_http_url(uri, url).empty());
  TrackingOptions o;
  o.mlflow_uri = uri;
  Warnings w;
  const auto t0 = Clock::now();
  {
    MlflowRun run(url, o, "r", {{"train", {{"max_steps", 5}}}}, w.sink(), short_timeouts());
    CHECK(log_steps(run) < 0.5);
    run.finish(RunEnd::Killed, "", {});
  }
  // The first call's timeout, then every later call skipped (retry_after) and a bounded finish.
  CHECK(Clock::now() - t0 < 5s);
  REQUIRE(w.count() == 1);
  CHECK_THAT(w.lines[0], Catch::Contains("creating the run failed") && Catch::Contains("no answer within"));
}

namespace {

int count_prefix(const std::vector<std::string>& events, const std::string& prefix) {
  return static_cast<int>(
      std::count_if(events.begin(), events.end(), [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }));
}

}  // namespace

TEST_CASE("a backlog of 2000 logging steps goes out in batches, then the artifact and the status",
          "[tracking][mlflow_run]") {
  // 20 ms a request: one request per logging step would need 40 s; batches need well under 1 s.
  mtrain::testing::FakeMlflowServer server(20ms);
  mtrain::testing::TempDir dir;
  std::ofstream(dir.path / "summary.json") << "{}\n";
  HttpUrl url;
  REQUIRE(parse_http_url(server.uri(), url).empty());
  TrackingOptions o;
  o.mlflow_uri = server.uri();
  Warnings w;
  MlflowTimeouts t;
  t.call = 2s;
  t.finish_grace = 5s;
  const std::string record = (dir.path / "mlflow_run.json").string();
  const auto t0 = Clock::now();
  {
    MlflowRun run(url, o, "r", {{"train", {{"max_steps", 2000}}}}, w.sink(), t, record);
    const auto t1 = Clock::now();
    for (int step = 1; step <= 2000; ++step)
      run.metrics(step, {{"train/loss", 1.0 / step}, {"train/lr", 1e-3}, {"train/time", 0.1}, {"train/memory", 5}});
    CHECK(Clock::now() - t1 < 500ms);  // the loop never waits
    run.finish(RunEnd::Finished, "", {{"summary.json", (dir.path / "summary.json").string()}});
    CHECK(run.dropped_points() == 0);
  }
  CHECK(Clock::now() - t0 < 5s);
  CHECK(w.count() == 0);
  const auto events = server.events();
  CHECK(server.points().size() == 8000);
  // The parameters' batch, then the points in ≥ 8 requests of ≤ 1000 (the server refuses more).
  CHECK(count_prefix(events, "log-batch") <= 40);
  REQUIRE(events.size() >= 2);
  CHECK(events[events.size() - 2] == "artifact summary.json");
  CHECK(events.back() == "update FINISHED");
  // The run's id was left for the launcher as soon as the run existed.
  const auto rec = mtrain::mlflow::read_run_record(record);
  REQUIRE(rec.has_value());
  CHECK(rec->run_id == mtrain::testing::FakeMlflowServer::kRunId);
  CHECK(rec->uri == server.uri());
}

TEST_CASE("points that cannot all go out in time are dropped, never the artifact and the status",
          "[tracking][mlflow_run]") {
  // 150 ms a request, 0.5 s for the points at the end: most of 20000 points are left behind.
  mtrain::testing::FakeMlflowServer server(150ms);
  mtrain::testing::TempDir dir;
  std::ofstream(dir.path / "summary.json") << "{}\n";
  HttpUrl url;
  REQUIRE(parse_http_url(server.uri(), url).empty());
  TrackingOptions o;
  o.mlflow_uri = server.uri();
  Warnings w;
  MlflowTimeouts t;
  t.call = 2s;
  t.finish_grace = 500ms;
  int64_t dropped = 0;
  {
    MlflowRun run(url, o, "r", {{"train", {{"max_steps", 5000}}}}, w.sink(), t);
    for (int step = 1; step <= 5000; ++step)
      run.metrics(step, {{"train/loss", 1.0}, {"train/lr", 1e-3}, {"train/time", 0.1}, {"train/memory", 5}});
    run.finish(RunEnd::Failed, "error: out of memory", {{"summary.json", (dir.path / "summary.json").string()}});
    dropped = run.dropped_points();
  }
  const auto events = server.events();
  CHECK(dropped > 0);
  CHECK(static_cast<int64_t>(server.points().size()) + dropped == 20000);
  REQUIRE(events.size() >= 3);
  CHECK(events[events.size() - 3] == "artifact summary.json");
  CHECK(events[events.size() - 2] == "log-batch metrics=0 params=0 tags=1");
  CHECK(events.back() == "update FAILED");
  CHECK(server.tags().at("mtrain.failure") == "error: out of memory");
  REQUIRE(w.count() == 1);
  CHECK_THAT(w.lines[0], Catch::Contains("metric points were not sent") && Catch::Contains("metrics.jsonl has them"));
}

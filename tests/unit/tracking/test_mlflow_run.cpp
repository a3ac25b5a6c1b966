// An MLflow server that is down or never answers costs the training loop nothing: every call
// returns at once, there is one warning, and finishing waits a bounded time. (The real server is
// tests/e2e/tracking/test_mlflow.sh.)
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "mtrain/tracking/http_client.hpp"
#include "mtrain/tracking/mlflow_run.hpp"

using namespace mtrain::tracking;
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

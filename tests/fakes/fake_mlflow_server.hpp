#pragma once
// A tracking server in this process that answers the REST calls mtrain makes (experiments,
// runs/create, runs/log-batch, runs/update, runs/get, the artifact proxy's PUT) as MLflow does,
// and remembers them in order, with an optional delay per request (a server slower than the
// training loop). Its limits are MLflow's: a log-batch of more than 1000 metrics is refused. The
// real server is tests/e2e/tracking/test_mlflow.sh.
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace mtrain::testing {

class FakeMlflowServer {
 public:
  static constexpr const char* kRunId = "0123456789abcdef0123456789abcdef";

  explicit FakeMlflowServer(std::chrono::milliseconds delay = std::chrono::milliseconds(0))
      : delay_(delay), acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeMlflowServer() {
    stop_ = true;
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect(acceptor_.local_endpoint(), ec);  // unblocks accept()
    thread_.join();
  }
  FakeMlflowServer(const FakeMlflowServer&) = delete;
  FakeMlflowServer& operator=(const FakeMlflowServer&) = delete;

  std::string uri() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }

  // "log-batch metrics=N params=N tags=N", "artifact NAME", "update STATUS", "get", "create", …
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }
  std::string status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  void set_status(const std::string& s) {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = s;
  }
  std::map<std::string, std::string> tags() const {
    std::lock_guard<std::mutex> lock(mu_);
    return tags_;
  }
  // (key, step) of every metric point received
  std::vector<std::pair<std::string, int64_t>> points() const {
    std::lock_guard<std::mutex> lock(mu_);
    return points_;
  }

 private:
  void serve() {
    namespace http = boost::beast::http;
    while (!stop_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket s(io_);
      acceptor_.accept(s, ec);
      if (ec || stop_) continue;
      boost::beast::flat_buffer buf;
      http::request<http::string_body> req;
      http::read(s, buf, req, ec);
      if (ec) continue;
      if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
      http::response<http::string_body> res;
      res.version(11);
      res.result(http::status::ok);
      res.body() = answer(std::string(req.method_string()), std::string(req.target()), req.body(), res);
      res.prepare_payload();
      http::write(s, res, ec);
      s.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  std::string answer(const std::string& method, const std::string& target, const std::string& body,
                     boost::beast::http::response<boost::beast::http::string_body>& res) {
    using nlohmann::json;
    std::lock_guard<std::mutex> lock(mu_);
    const auto has = [&](const char* path) { return target.find(path) != std::string::npos; };
    if (has("/experiments/get-by-name")) return json{{"experiment", {{"experiment_id", "1"}}}}.dump();
    if (has("/runs/create")) {
      events_.push_back("create");
      status_ = "RUNNING";
      return json{
          {"run",
           {{"info",
             {{"run_id", kRunId}, {"artifact_uri", std::string("mlflow-artifacts:/1/") + kRunId + "/artifacts"}}}}}}
          .dump();
    }
    if (has("/runs/log-batch")) {
      const json j = json::parse(body);
      const size_t m = j.value("metrics", json::array()).size();
      if (m > 1000) {
        res.result(boost::beast::http::status::bad_request);
        return json{{"error_code", "INVALID_PARAMETER_VALUE"}, {"message", "at most 1000 metrics"}}.dump();
      }
      for (const auto& x : j.value("metrics", json::array()))
        points_.emplace_back(x.at("key").get<std::string>(), x.at("step").get<int64_t>());
      for (const auto& t : j.value("tags", json::array()))
        tags_[t.at("key").get<std::string>()] = t.at("value").get<std::string>();
      events_.push_back("log-batch metrics=" + std::to_string(m) +
                        " params=" + std::to_string(j.value("params", json::array()).size()) +
                        " tags=" + std::to_string(j.value("tags", json::array()).size()));
      return "{}";
    }
    if (has("/runs/update")) {
      status_ = json::parse(body).at("status").get<std::string>();
      events_.push_back("update " + status_);
      return "{}";
    }
    if (has("/runs/get")) {
      events_.push_back("get");
      return json{{"run", {{"info", {{"run_id", kRunId}, {"status", status_}}}}}}.dump();
    }
    if (method == "PUT" && has("/mlflow-artifacts/artifacts/")) {
      events_.push_back("artifact " + target.substr(target.rfind('/') + 1));
      return "{}";
    }
    res.result(boost::beast::http::status::not_found);
    return json{{"error_code", "ENDPOINT_NOT_FOUND"}, {"message", target}}.dump();
  }

  const std::chrono::milliseconds delay_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stop_{false};
  mutable std::mutex mu_;
  std::vector<std::string> events_;
  std::string status_;
  std::map<std::string, std::string> tags_;
  std::vector<std::pair<std::string, int64_t>> points_;
  std::thread thread_;  // last: started when everything it uses exists
};

}  // namespace mtrain::testing

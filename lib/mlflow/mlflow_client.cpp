#include "lib/mlflow/mlflow_client.hpp"

#include <cctype>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace mtrain::mlflow {

using nlohmann::json;

namespace {

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

// Path segments keep their '/'.
std::string path_encode(const std::string& s) {
  std::string out;
  size_t b = 0;
  for (;;) {
    const size_t e = s.find('/', b);
    out += url_encode(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) return out;
    out += '/';
    b = e + 1;
  }
}

json key_values(const KeyValues& kv) {
  json a = json::array();
  for (const auto& [k, v] : kv) a.push_back({{"key", k}, {"value", v}});
  return a;
}

std::string error_text(const HttpResponse& r) {
  std::string what = fmt::format("HTTP {}", r.status);
  const json j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error_code")) {
    what += fmt::format(" {}: {}", j.value("error_code", ""), j.value("message", ""));
  }
  return what;
}

}  // namespace

std::string artifact_proxy_path(const std::string& artifact_uri) {
  const std::string scheme = "mlflow-artifacts:";
  if (artifact_uri.rfind(scheme, 0) != 0) return "";
  std::string rest = artifact_uri.substr(scheme.size());
  if (rest.rfind("//", 0) == 0) {  // an authority: the proxy is the server we talk to
    const size_t slash = rest.find('/', 2);
    rest = slash == std::string::npos ? "" : rest.substr(slash);
  }
  while (!rest.empty() && rest.front() == '/') rest.erase(0, 1);
  return rest;
}

std::string MlflowClient::call(const std::string& method, const std::string& target, const std::string& body) {
  HttpRequest req;
  req.method = method;
  req.target = target;
  req.body = body;
  req.timeout = timeout_;
  const HttpResponse r = http_request(url_, req);
  if (r.status != 200) throw std::runtime_error(fmt::format("{} {}: {}", method, target, error_text(r)));
  return r.body;
}

std::string MlflowClient::experiment_id(const std::string& name) {
  HttpRequest req;
  req.target = "/api/2.0/mlflow/experiments/get-by-name?experiment_name=" + url_encode(name);
  req.timeout = timeout_;
  const HttpResponse r = http_request(url_, req);
  if (r.status == 200) return json::parse(r.body).at("experiment").at("experiment_id").get<std::string>();
  if (r.status != 404) throw std::runtime_error("experiments/get-by-name: " + error_text(r));
  const json created = json::parse(call("POST", "/api/2.0/mlflow/experiments/create", json{{"name", name}}.dump()));
  return created.at("experiment_id").get<std::string>();
}

MlflowRunRef MlflowClient::create_run(const std::string& experiment_id, const std::string& run_name, int64_t start_ms,
                                      const KeyValues& tags) {
  const json body = {
      {"experiment_id", experiment_id}, {"run_name", run_name}, {"start_time", start_ms}, {"tags", key_values(tags)}};
  const json info = json::parse(call("POST", "/api/2.0/mlflow/runs/create", body.dump())).at("run").at("info");
  return {info.at("run_id").get<std::string>(), info.value("artifact_uri", "")};
}

void MlflowClient::log_batch(const std::string& run_id, const std::vector<MlflowMetric>& metrics,
                             const KeyValues& params, const KeyValues& tags) {
  json m = json::array();
  for (const auto& x : metrics) {
    m.push_back({{"key", x.key}, {"value", x.value}, {"timestamp", x.timestamp_ms}, {"step", x.step}});
  }
  const json body = {{"run_id", run_id}, {"metrics", m}, {"params", key_values(params)}, {"tags", key_values(tags)}};
  call("POST", "/api/2.0/mlflow/runs/log-batch", body.dump(-1, ' ', false, json::error_handler_t::replace));
}

void MlflowClient::update_run(const std::string& run_id, const std::string& status, int64_t end_ms) {
  call("POST", "/api/2.0/mlflow/runs/update",
       json{{"run_id", run_id}, {"status", status}, {"end_time", end_ms}}.dump());
}

std::string MlflowClient::run_status(const std::string& run_id) {
  HttpRequest req;
  req.target = "/api/2.0/mlflow/runs/get?run_id=" + url_encode(run_id);
  req.timeout = timeout_;
  const HttpResponse r = http_request(url_, req);
  if (r.status != 200) throw std::runtime_error("runs/get: " + error_text(r));
  const json j = json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("run") || !j["run"].contains("info") || !j["run"]["info"].contains("status") ||
      !j["run"]["info"]["status"].is_string())
    throw std::runtime_error("runs/get: an answer without run.info.status");
  return j["run"]["info"]["status"].get<std::string>();
}

void MlflowClient::upload_artifact(const MlflowRunRef& run, const std::string& file, const std::string& name,
                                   std::chrono::milliseconds upload_timeout) {
  const std::string path = artifact_proxy_path(run.artifact_uri);
  if (path.empty()) {
    throw std::runtime_error(
        fmt::format("the run's artifact location {} is not served by the tracking server "
                    "(start it with --serve-artifacts)",
                    run.artifact_uri));
  }
  HttpRequest req;
  req.method = "PUT";
  req.target = "/api/2.0/mlflow-artifacts/artifacts/" + path_encode(path + "/" + name);
  req.body_file = file;
  req.content_type = "application/octet-stream";
  req.timeout = upload_timeout;
  const HttpResponse r = http_request(url_, req);
  if (r.status != 200) throw std::runtime_error(fmt::format("uploading {}: {}", name, error_text(r)));
}

}  // namespace mtrain::mlflow

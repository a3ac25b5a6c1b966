#include "lib/mlflow/run_record.hpp"

#include <algorithm>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "lib/core/atomic_file.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/untrusted_file.hpp"
#include "lib/mlflow/http_client.hpp"
#include "lib/mlflow/mlflow_client.hpp"

namespace mtrain::mlflow {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr size_t kRecordBytes = 4096;

// MLflow's run ids are 32 hex digits; anything else in the file is not ours to send anywhere.
bool plausible_run_id(const std::string& id) {
  return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  });
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::string run_record_path(const std::string& error_file) {
  if (error_file.empty()) return "";
  return (std::filesystem::path(error_file).parent_path() / "mlflow_run.json").string();
}

bool write_run_record(const std::string& path, const RunRecord& r) noexcept {
  try {
    return replace_file_atomically(path, json{{"uri", r.uri}, {"run_id", r.run_id}}.dump() + "\n", {0640}) == 0;
  } catch (const std::exception&) {
    return false;
  }
}

std::optional<RunRecord> read_run_record(const std::string& path) {
  InputLimits lim;
  lim.max_bytes = kRecordBytes;
  lim.max_depth = 2;
  lim.max_nodes = 8;
  try {
    // Opened without blocking (a FIFO at the path must not hang the launcher), read bounded.
    std::string why;
    const UntrustedFile f = open_untrusted(path, &why);
    if (f.fd() < 0 || f.size() > kRecordBytes) return std::nullopt;
    std::string text(f.size(), '\0');
    if (!f.pread_exact(text.data(), text.size(), 0)) return std::nullopt;
    const json j = parse_json_limited(text, path, false, lim);
    if (!j.is_object() || !j.contains("uri") || !j["uri"].is_string() || !j.contains("run_id") ||
        !j["run_id"].is_string())
      return std::nullopt;
    RunRecord r{j["uri"].get<std::string>(), j["run_id"].get<std::string>()};
    HttpUrl url;
    if (!parse_http_url(r.uri, url).empty() || !plausible_run_id(r.run_id)) return std::nullopt;
    return r;
  } catch (const std::exception&) {
    return std::nullopt;  // not JSON, or over the limits: not a record
  }
}

std::string end_recorded_run(const RunRecord& r, const std::string& status, const std::string& failure_line,
                             bool only_if_running, std::chrono::milliseconds budget) {
  HttpUrl url;
  if (std::string why = parse_http_url(r.uri, url); !why.empty()) return why;
  const auto deadline = Clock::now() + budget;
  MlflowClient client(url, budget);
  // An exchange may take up to twice its timeout (http_client.hpp): each call gets half of
  // what is left.
  const auto next_call = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) throw std::runtime_error(fmt::format("no time left within {} ms", budget.count()));
    client.set_timeout(std::max(left / 2, std::chrono::milliseconds(1)));
  };
  try {
    if (only_if_running) {
      next_call();
      if (client.run_status(r.run_id) != "RUNNING") return "";
    }
    if (!failure_line.empty()) {
      next_call();
      client.log_batch(r.run_id, {}, {}, {{kFailureTag, failure_line.substr(0, kTagValueChars)}});
    }
    next_call();
    client.update_run(r.run_id, status, now_ms());
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace mtrain::mlflow

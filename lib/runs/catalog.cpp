#include "mtrain/runs/catalog.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/run_folder.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace mtrain::runs {

namespace {

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return json();
  try {
    return json::parse(in);
  } catch (const std::exception&) {
    return json();
  }
}

double seconds_of(fs::file_time_type t) {
  // file_time_type's clock is not system_clock in C++17: convert through the present moment.
  const auto now_file = fs::file_time_type::clock::now();
  const auto now_sys = std::chrono::system_clock::now();
  const auto sys = now_sys + std::chrono::duration_cast<std::chrono::system_clock::duration>(t - now_file);
  return std::chrono::duration<double>(sys.time_since_epoch()).count();
}

std::string human_duration(double s) {
  const long long t = static_cast<long long>(s + 0.5);
  if (t < 60) return fmt::format("{}s", t);
  if (t < 3600) return fmt::format("{}m{:02}s", t / 60, t % 60);
  return fmt::format("{}h{:02}m", t / 3600, t % 3600 / 60);
}

std::string number(const std::optional<double>& v) { return v ? fmt::format("{:.4f}", *v) : "-"; }

}  // namespace

bool process_alive(long long pid, const std::string& host) {
  char me[256] = {0};
  gethostname(me, sizeof me - 1);
  if (pid <= 0 || host != me) return false;
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

Run read_run(const std::string& folder, const std::string& name, bool (*alive)(long long, const std::string&)) {
  const fs::path dir(folder);
  Run r;
  r.path = folder;
  r.name = name;
  const json info = read_json(dir / "run.json");
  const json summary = read_json(dir / "summary.json");
  auto text = [](const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : ""; };
  auto integer = [](const json& j, const char* k) { return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<long long>() : 0LL; };
  r.strategy = text(summary, "strategy").empty() ? text(info, "strategy") : text(summary, "strategy");
  r.model = text(summary, "model").empty() ? text(info, "model") : text(summary, "model");
  r.world = static_cast<int>(integer(summary, "world_size") ? integer(summary, "world_size") : integer(info, "world_size"));
  r.total_steps = integer(info, "total_steps");

  std::ifstream metrics(dir / "metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    json rec;
    try {
      rec = json::parse(line);
    } catch (const std::exception&) {
      continue;  // a line cut by a crash
    }
    if (!rec.is_object() || !rec.contains("step") || !rec.contains("loss") || !rec["loss"].is_number()) continue;
    const double step = rec["step"].get<double>(), loss = rec["loss"].get<double>();
    if (rec.value("mode", "train") == "val") {
      r.val.emplace_back(step, loss);
    } else {
      r.loss.emplace_back(step, loss);
      r.steps = std::max(r.steps, static_cast<long long>(step));
    }
  }
  if (!r.loss.empty()) r.final_loss = r.loss.back().second;
  if (!r.val.empty()) r.final_val = r.val.back().second;

  std::error_code ec;
  const double started = static_cast<double>(integer(info, "started"));
  double last = started;
  for (const char* f : {"run.json", "metrics.jsonl", "summary.json"}) {
    auto t = fs::last_write_time(dir / f, ec);
    if (!ec) last = std::max(last, seconds_of(t));
  }
  if (summary.is_object()) {
    r.steps = integer(summary, "steps");
    if (summary.contains("final_loss") && summary["final_loss"].is_number()) r.final_loss = summary["final_loss"].get<double>();
    if (summary.contains("final_val") && summary["final_val"].is_object() && summary["final_val"].contains("loss"))
      r.final_val = summary["final_val"]["loss"].get<double>();
    r.state = summary.contains("stopped_by") ? "stopped (" + text(summary, "stopped_by") + ")" : "finished";
  } else if (alive && alive(integer(info, "pid"), text(info, "host"))) {
    r.state = "running";
    last = static_cast<double>(std::time(nullptr));
  } else {
    r.state = "failed";
  }
  r.duration_s = started > 0 ? std::max(0.0, last - started) : 0;
  return r;
}

std::vector<Run> list_runs(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(fmt::format("'{}' is not a folder", dir), "Give a work dir (train.work_dir) or a folder of them.");
  std::vector<std::pair<std::string, std::string>> found;  // (folder, shown name)
  auto scan = [&](const fs::path& wd, const std::string& prefix) {
    std::error_code e2;
    for (const auto& e : fs::directory_iterator(wd, e2)) {
      const std::string n = e.path().filename().string();
      if (!e.is_symlink(e2) && e.is_directory(e2) && is_run_folder_name(n)) found.emplace_back(e.path().string(), prefix + n);
    }
  };
  const fs::path d(dir);
  if (is_run_folder_name(d.filename().string())) {
    found.emplace_back(d.string(), d.filename().string());
  } else {
    scan(d, "");
    for (const auto& e : fs::directory_iterator(d, ec)) {
      std::error_code e2;
      if (!e.is_symlink(e2) && e.is_directory(e2) && !is_run_folder_name(e.path().filename().string()))
        scan(e.path(), e.path().filename().string() + "/");
    }
  }
  std::vector<Run> out;
  for (const auto& [folder, name] : found) out.push_back(read_run(folder, name, process_alive));
  std::sort(out.begin(), out.end(), [](const Run& a, const Run& b) {
    const std::string ta = fs::path(a.path).filename().string(), tb = fs::path(b.path).filename().string();
    return ta != tb ? ta < tb : a.name < b.name;
  });
  return out;
}

Run resolve_run(const std::string& arg) {
  std::error_code ec;
  const fs::path p(arg);
  if (!fs::is_directory(p, ec)) throw Error(fmt::format("run '{}' is not a folder", arg), "Give a run folder or a work dir; `mtrain runs DIR` lists them.");
  if (fs::exists(p / "run.json", ec) || is_run_folder_name(p.filename().string())) return read_run(arg, arg, process_alive);
  auto runs = list_runs(arg);
  if (runs.empty()) throw Error(fmt::format("'{}' holds no runs", arg), "Give a run folder, e.g. work_dirs/default/20261123_150401.");
  Run newest = runs.back();
  newest.name = arg;
  return newest;
}

std::string runs_table(const std::vector<Run>& runs) {
  if (runs.empty()) return "no runs\n";
  std::vector<std::vector<std::string>> rows{{"RUN", "STRATEGY", "WORLD", "STEPS", "LOSS", "VAL", "DURATION", "STATE"}};
  for (const auto& r : runs)
    rows.push_back({r.name, r.strategy.empty() ? "-" : r.strategy, r.world ? std::to_string(r.world) : "-",
                    r.total_steps ? fmt::format("{}/{}", r.steps, r.total_steps) : std::to_string(r.steps),
                    number(r.final_loss), number(r.final_val), human_duration(r.duration_s), r.state});
  std::vector<size_t> width(rows[0].size(), 0);
  for (const auto& row : rows)
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) line += fmt::format("{:<{}}", row[i], i + 1 < row.size() ? width[i] + 2 : 0);
    out += line + "\n";
  }
  return out;
}

json runs_json(const std::vector<Run>& runs, bool with_curves) {
  json out = json::array();
  for (const auto& r : runs) {
    json j{{"run", r.name},   {"path", r.path},   {"strategy", r.strategy}, {"model", r.model},
           {"world_size", r.world}, {"steps", r.steps}, {"total_steps", r.total_steps},
           {"final_loss", r.final_loss ? json(*r.final_loss) : json()},
           {"final_val_loss", r.final_val ? json(*r.final_val) : json()},
           {"duration_s", r.duration_s}, {"state", r.state}};
    if (with_curves) {
      j["loss"] = r.loss;
      j["val"] = r.val;
    }
    out.push_back(j);
  }
  return {{"runs", out}};
}

}  // namespace mtrain::runs

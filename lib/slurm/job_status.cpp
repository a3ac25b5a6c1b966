#include "lib/slurm/job_status.hpp"

#include <map>
#include <regex>

#include <fmt/format.h>

#include "lib/core/strings.hpp"

namespace mtrain::slurm {

namespace {

// Split into at most `n` fields: the last one (the job name) keeps any separators it contains.
std::vector<std::string> split_n(const std::string& line, char sep, size_t n) {
  std::vector<std::string> out;
  size_t i = 0;
  while (out.size() + 1 < n) {
    size_t j = line.find(sep, i);
    if (j == std::string::npos) break;
    out.push_back(line.substr(i, j - i));
    i = j + 1;
  }
  out.push_back(line.substr(i));
  return out;
}

std::string first_word(const std::string& s) {
  std::string t = str::trim(s);
  return t.substr(0, t.find(' '));
}

}  // namespace

bool JobStatus::terminal() const {
  static const char* kDone[] = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
                                "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT"};
  for (const char* s : kDone)
    if (state == s) return true;
  return false;
}

std::string JobStatus::readable() const {
  std::string s = state.empty() ? "UNKNOWN" : state;
  if (terminal()) {
    if (signal > 0) s += fmt::format(", killed by signal {}", signal);
    else if (exit_code >= 0 && !(state == "CANCELLED" && exit_code == 0)) s += fmt::format(", exit code {}", exit_code);
  } else if (state == "PENDING") {
    if (!reason.empty() && reason != "None") s += " (" + reason + ")";
  } else {
    if (!nodes.empty()) s += " on " + nodes;
    if (!elapsed.empty()) s += " for " + elapsed;
  }
  return s;
}

nlohmann::json JobStatus::to_json() const {
  nlohmann::json j{{"job_id", job_id}, {"name", name}, {"state", state}, {"readable", readable()},
                   {"terminal", terminal()}, {"nodes", nodes}, {"elapsed", elapsed}, {"reason", reason},
                   {"source", source}};
  j["exit_code"] = exit_code >= 0 ? nlohmann::json(exit_code) : nlohmann::json(nullptr);
  j["signal"] = signal;
  j["stdout"] = stdout_path;
  j["stderr"] = stderr_path;
  return j;
}

void parse_exit_code(const std::string& text, JobStatus& st) {
  auto parts = str::split(str::trim(text), ':');
  if (parts.empty()) return;
  if (auto c = str::parse_uint(parts[0])) st.exit_code = static_cast<int>(*c);
  if (parts.size() > 1)
    if (auto s = str::parse_uint(parts[1])) st.signal = static_cast<int>(*s);
}

std::optional<JobStatus> parse_squeue(const std::string& out, const std::string& job_id) {
  for (const auto& line : str::split(out, '\n')) {
    if (str::trim(line).empty()) continue;
    auto f = split_n(line, kSep, 6);
    if (f.size() < 6 || str::trim(f[0]) != job_id) continue;
    JobStatus st;
    st.job_id = job_id;
    st.state = str::trim(f[1]);
    st.reason = str::trim(f[2]);
    st.nodes = str::trim(f[3]);
    st.elapsed = str::trim(f[4]);
    st.name = f[5];
    st.source = "squeue";
    return st;
  }
  return std::nullopt;
}

std::optional<JobStatus> parse_sacct(const std::string& out, const std::string& job_id) {
  // Without -X (sacct -c) steps appear as "ID.batch", "ID.0": the allocation line is "ID".
  // With a requeued job, later lines are newer: keep the last.
  std::optional<JobStatus> found;
  for (const auto& line : str::split(out, '\n')) {
    if (str::trim(line).empty()) continue;
    auto f = split_n(line, '|', 6);
    if (str::trim(f[0]) != job_id || f.size() < 3) continue;
    JobStatus st;
    st.job_id = job_id;
    st.state = first_word(f[1]);  // "CANCELLED by 0"
    parse_exit_code(f[2], st);
    if (f.size() > 3) st.nodes = str::trim(f[3]);
    if (f.size() > 4) st.elapsed = str::trim(f[4]);
    if (f.size() > 5) st.name = f[5];
    found = st;
  }
  return found;
}

std::optional<JobStatus> parse_scontrol(const std::string& out, const std::string& job_id) {
  // One line of Key=Value pairs; values may contain spaces (JobName, Command), so a value runs
  // up to the next " Key=" where Key looks like Slurm's (letters, digits, '/', ':').
  std::string line = str::trim(out);
  if (line.empty() || line.find("JobId=") == std::string::npos) return std::nullopt;
  static const std::regex key_re(R"((?:^|\s)([A-Z][A-Za-z0-9_/:]*)=)");
  std::map<std::string, std::string> kv;
  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> keys;  // name, (match pos, value pos)
  for (auto it = std::sregex_iterator(line.begin(), line.end(), key_re); it != std::sregex_iterator(); ++it)
    keys.push_back({(*it)[1].str(), {static_cast<size_t>(it->position(0)), static_cast<size_t>(it->position(0) + it->length(0))}});
  for (size_t k = 0; k < keys.size(); ++k) {
    size_t end = k + 1 < keys.size() ? keys[k + 1].second.first : line.size();
    kv.emplace(keys[k].first, line.substr(keys[k].second.second, end - keys[k].second.second));
  }
  if (str::trim(kv["JobId"]) != job_id) return std::nullopt;
  JobStatus st;
  st.job_id = job_id;
  st.name = kv["JobName"];
  st.state = first_word(kv["JobState"]);
  st.reason = str::trim(kv["Reason"]);
  parse_exit_code(kv["ExitCode"], st);
  st.nodes = str::trim(kv["NodeList"]);
  if (st.nodes == "(null)") st.nodes.clear();
  st.elapsed = str::trim(kv["RunTime"]);
  st.stdout_path = str::trim(kv["StdOut"]);
  st.stderr_path = str::trim(kv["StdErr"]);
  st.source = "scontrol";
  return st;
}

std::string expand_file_pattern(const std::string& pattern, const std::string& job_id,
                                const std::string& job_name, const std::string& user) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    switch (c) {
      case 'j': case 'J': case 'A': out += job_id; break;
      case 'x': out += job_name; break;
      case 'u': out += user; break;
      case '%': out += '%'; break;
      default: out += '%'; out += c;
    }
  }
  return out;
}

}  // namespace mtrain::slurm

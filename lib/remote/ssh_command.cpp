#include "lib/remote/ssh_command.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"

namespace mtrain::remote {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

void require_identifier(const std::string& name, const std::string& what) {
  if (!is_identifier(name))
    throw Error(fmt::format("{} '{}' is not a valid environment variable name", what, name),
                "Names use letters, digits and '_' and do not start with a digit.");
}

bool forwarded_by_default(const std::string& name) {
  if (name == "CUDA_VISIBLE_DEVICES") return false;
  for (const char* p : {"NCCL_", "GLOO_", "CUDA_", "PYTHON", "OMP_", "MTRAIN_"})
    if (str::starts_with(name, p)) return true;
  return false;
}

}  // namespace

Env forwarded_env(const Env& launcher_env, const std::vector<std::string>& exports,
                  const std::vector<std::string>& exclude) {
  auto excluded = [&](const std::string& n) { return std::find(exclude.begin(), exclude.end(), n) != exclude.end(); };
  Env out;
  for (const auto& [k, v] : launcher_env)
    if (forwarded_by_default(k) && !excluded(k) && is_identifier(k)) out[k] = v;
  for (const auto& item : exports) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    require_identifier(name, "--export");
    if (excluded(name))
      throw Error(fmt::format("--export {}: this secret is passed to agents separately", name),
                  "Drop it from --export; mtrain hands it over without showing it in a command line.");
    if (eq != std::string::npos) {
      out[name] = item.substr(eq + 1);
      continue;
    }
    auto it = launcher_env.find(name);
    if (it == launcher_env.end())
      throw Error(fmt::format("--export {}: the variable is not set here", name),
                  fmt::format("Set it before launching, or write --export {}=VALUE.", name));
    out[name] = it->second;
  }
  return out;
}

std::string remote_command_line(const RemoteCommand& cmd) {
  if (cmd.argv.empty()) throw Error("no agent command to run remotely");
  std::vector<std::string> parts;
  for (const auto& name : cmd.secret_env) {
    require_identifier(name, "secret");
    // A missing line means the launcher died before sending it: stop rather than run without.
    parts.push_back(fmt::format("IFS= read -r {0} || exit 97; export {0}", name));
  }
  if (!cmd.workdir.empty()) parts.push_back(fmt::format("cd -- {} || exit 98", str::shell_quote(cmd.workdir)));
  for (const auto& [k, v] : cmd.env) {
    require_identifier(k, "environment variable");
    parts.push_back(fmt::format("export {}={}", k, str::shell_quote(v)));
  }
  parts.push_back(fmt::format("echo {}", str::shell_quote(fmt::format("MTRAIN_AGENT job={} pgid=", cmd.job_id))) +
                  "$$");
  parts.push_back("exec " + str::shell_join(cmd.argv));
  return str::join(parts, "; ");
}

std::string stdin_preamble(const RemoteCommand& cmd, const Env& secrets) {
  std::string out;
  for (const auto& name : cmd.secret_env) {
    auto it = secrets.find(name);
    if (it == secrets.end()) throw Error(fmt::format("no value for the secret {}", name));
    if (it->second.find('\n') != std::string::npos || it->second.find('\r') != std::string::npos)
      throw Error(fmt::format("{} contains a line break", name), "Use a single-line value.");
    out += it->second + "\n";
  }
  return out;
}

std::vector<std::string> ssh_argv(const SshOptions& s, const std::string& remote_command_line) {
  if (s.host.empty()) throw Error("ssh: no host given");
  if (s.host[0] == '-' || (!s.user.empty() && s.user[0] == '-'))
    throw Error(fmt::format("host '{}' starts with '-'", s.host), "Host and user names cannot start with '-'.");
  std::vector<std::string> a{s.program, "-T", "-x", "-a", "-o", "BatchMode=yes"};
  // ssh keeps the first value it gets for an option: the user's -o come before mtrain's
  // defaults so they can change the timeouts (BatchMode stays: never a password prompt).
  for (const auto& o : s.options) {
    a.push_back("-o");
    a.push_back(o);
  }
  std::vector<std::string> defaults{"-o", fmt::format("ConnectTimeout={}", s.connect_timeout_s),
                             "-o", fmt::format("ServerAliveInterval={}", s.alive_interval_s),
                             "-o", fmt::format("ServerAliveCountMax={}", s.alive_count_max)};
  a.insert(a.end(), defaults.begin(), defaults.end());
  if (s.port) {
    a.push_back("-p");
    a.push_back(std::to_string(s.port));
  }
  if (!s.identity_file.empty()) {
    a.push_back("-i");
    a.push_back(s.identity_file);
  }
  a.push_back("--");
  a.push_back(s.user.empty() ? s.host : s.user + "@" + s.host);
  a.push_back(remote_command_line);
  return a;
}

std::string stop_command_line(int pgid, const std::string& signal) {
  if (pgid <= 1) throw Error(fmt::format("refusing to signal process group {}", pgid));
  if (signal.empty() || !std::all_of(signal.begin(), signal.end(), [](char c) { return std::isupper(static_cast<unsigned char>(c)); }))
    throw Error(fmt::format("'{}' is not a signal name", signal));
  return fmt::format("kill -s {} -- -{}", signal, pgid);
}

std::string agent_record_dir(const std::string& job_id, const Env& agent_env) {
  auto it = agent_env.find("XDG_RUNTIME_DIR");
  std::string base = it != agent_env.end() && !it->second.empty() ? it->second : "/tmp";
  return base + "/mtrain-" + job_id;
}

std::string stop_recorded_command_line(const std::string& job_id, const std::string& node, const std::string& signal) {
  stop_command_line(2, signal);  // checks the signal name
  return fmt::format(
      "f=\"${{XDG_RUNTIME_DIR:-/tmp}}\"/{}/{}; p=$(cat \"$f\") || exit 1; "
      "case $p in ''|*[!0-9]*) exit 1;; esac; [ \"$p\" -gt 1 ] || exit 1; kill -s {} -- -\"$p\"",
      str::shell_quote("mtrain-" + job_id), str::shell_quote(node + ".pgid"), signal);
}

std::optional<int> parse_announcement(const std::string& line, const std::string& job_id) {
  std::string prefix = fmt::format("MTRAIN_AGENT job={} pgid=", job_id);
  std::string l = line;
  if (!l.empty() && l.back() == '\r') l.pop_back();
  if (!str::starts_with(l, prefix)) return std::nullopt;
  auto v = str::parse_uint(std::string_view(l).substr(prefix.size()));
  if (!v || *v <= 1 || *v > 0x7fffffff) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace mtrain::remote

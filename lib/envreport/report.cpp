#include "lib/envreport/report.hpp"

#include <cstdint>
#include <sstream>

#include <fmt/format.h>

#include "lib/core/strings.hpp"

namespace mtrain::envreport {

namespace {

// "KEY=value" lines (os-release) or "Key:   value" lines (/proc/cpuinfo, /proc/meminfo).
std::string field(const std::string& text, const std::string& key, char sep) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find(sep);
    if (p == std::string::npos || str::trim(line.substr(0, p)) != key) continue;
    std::string v = str::trim(line.substr(p + 1));
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
    return v;
  }
  return "";
}

json meminfo_bytes(const std::string& meminfo, const std::string& key) {
  std::string v = field(meminfo, key, ':');  // "16318460 kB"
  auto n = str::parse_uint(str::split(v, ' ').empty() ? "" : str::split(v, ' ')[0]);
  return n ? json(static_cast<uint64_t>(*n) * 1024) : json(nullptr);
}

json limit_value(uint64_t v) { return v == UINT64_MAX ? json(nullptr) : json(v); }

}  // namespace

json collect_report(const SystemProbe& probe, const ReportOptions& opt) {
  const auto env = probe.environment();
  json r;
  r["schema"] = "mtrain.env/1";
  r["mtrain"] = {{"version", opt.version},
                 {"executable", opt.executable},
                 {"worker", probe_worker(probe, opt.worker_path, opt.command_timeout_ms)}};
  r["python"] = probe_python(probe, opt.command_timeout_ms);

  const Uname u = probe.uname();
  const std::string os_release = probe.read_file("/etc/os-release").value_or("");
  std::string os_name = field(os_release, "PRETTY_NAME", '=');
  r["os"] = {{"name", os_name.empty() ? u.sysname : os_name},
             {"kernel", u.release},
             {"machine", u.machine},
             {"hostname", u.hostname}};

  const std::string cpuinfo = probe.read_file("/proc/cpuinfo").value_or("");
  std::string model = field(cpuinfo, "model name", ':');
  r["cpu"] = {{"model", model.empty() ? json(nullptr) : json(model)}, {"cores", probe.cpu_count()}};

  const std::string meminfo = probe.read_file("/proc/meminfo").value_or("");
  r["memory"] = {{"total_bytes", meminfo_bytes(meminfo, "MemTotal")},
                 {"available_bytes", meminfo_bytes(meminfo, "MemAvailable")}};

  r["gpus"] = probe_gpus(probe, opt.command_timeout_ms);

  json nics = json::array();
  for (const auto& n : probe.interfaces())
    nics.push_back({{"name", n.name}, {"up", n.up}, {"loopback", n.loopback}, {"addresses", n.addresses}});
  r["network"] = nics;

  r["slurm"] = probe_slurm(probe, opt.command_timeout_ms);
  r["environment"] = probe_environment(env);
  r["user_config"] = probe_user_config(probe, env);

  const FsSpace shm = probe.space("/dev/shm");
  r["shm"] = {{"path", "/dev/shm"},
              {"mounted", shm.ok},
              {"total_bytes", shm.ok ? json(shm.total_bytes) : json(nullptr)},
              {"free_bytes", shm.ok ? json(shm.free_bytes) : json(nullptr)}};
  const Limits l = probe.limits();
  r["limits"] = {{"open_files_soft", limit_value(l.open_files_soft)},
                 {"open_files_hard", limit_value(l.open_files_hard)}};
  if (!opt.rdzv_backend.empty())
    r["rendezvous"] =
        probe_rendezvous(opt.rdzv_backend, opt.rdzv_endpoint, opt.command_timeout_ms,
                         {opt.rdzv_etcd_cacert, opt.rdzv_etcd_cert, opt.rdzv_etcd_key}, opt.rdzv_etcd_api);
  r["warnings"] = compute_warnings(r, env);
  return r;
}

}  // namespace mtrain::envreport

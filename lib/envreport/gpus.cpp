// GPUs through nvidia-smi (the driver's own tool: present wherever the NVIDIA driver is), and
// what mtrain-worker was compiled with (LibTorch, CUDA, NCCL), asked from the worker itself.
#include <regex>

#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"

namespace mtrain::envreport {

namespace {

const std::vector<std::string> kQuery = {"index", "name", "uuid", "driver_version", "memory.total",
                                         "mig.mode.current", "pci.bus_id"};

json na_or(const std::string& v) {
  if (v.empty() || v == "[N/A]" || v == "N/A" || v == "[Not Supported]") return nullptr;
  return v;
}

}  // namespace

json probe_gpus(const SystemProbe& probe, int timeout_ms) {
  json g = {{"source", "none"}, {"devices", json::array()}, {"topology", nullptr},
            {"cuda_driver_version", nullptr}, {"note", nullptr}};
  if (probe.which("nvidia-smi").empty()) {
    g["note"] = "no GPU: nvidia-smi is not installed (no NVIDIA driver on this machine)";
    return g;
  }
  auto q = probe.run({"nvidia-smi", "--query-gpu=" + str::join(kQuery, ","), "--format=csv,noheader,nounits"},
                     timeout_ms);
  if (!q.started || q.rc != 0) {
    std::string why = str::trim(q.err.empty() ? q.out : q.err);
    g["note"] = "no GPU: nvidia-smi failed" + (why.empty() ? std::string() : ": " + why);
    return g;
  }
  g["source"] = "nvidia-smi";
  for (const auto& line : str::split(q.out, '\n')) {
    if (str::trim(line).empty()) continue;
    auto f = str::split(line, ',');
    for (auto& x : f) x = str::trim(x);
    if (f.size() < kQuery.size()) continue;
    auto idx = str::parse_uint(f[0]);
    auto mem = str::parse_uint(f[4]);
    g["devices"].push_back({{"index", idx ? json(*idx) : json(nullptr)},
                            {"name", f[1]},
                            {"uuid", f[2]},
                            {"driver", f[3]},
                            {"memory_total_bytes", mem ? json(static_cast<uint64_t>(*mem) << 20) : json(nullptr)},
                            {"mig_mode", na_or(f[5])},
                            {"pci_bus_id", f[6]}});
  }
  if (g["devices"].empty()) g["note"] = "no GPU: nvidia-smi lists no device";
  auto head = probe.run({"nvidia-smi"}, timeout_ms);
  std::smatch m;
  static const std::regex kCuda("CUDA Version: *([0-9.]+)");
  if (head.rc == 0 && std::regex_search(head.out, m, kCuda)) g["cuda_driver_version"] = m[1].str();
  auto topo = probe.run({"nvidia-smi", "topo", "-m"}, timeout_ms);
  if (topo.rc == 0 && !str::trim(topo.out).empty()) g["topology"] = topo.out;
  return g;
}

json probe_worker(const SystemProbe& probe, const std::string& worker_path, int timeout_ms) {
  json w = {{"path", worker_path.empty() ? json(nullptr) : json(worker_path)}, {"found", false}};
  if (worker_path.empty()) {
    w["error"] = "mtrain-worker is not installed next to mtrain (a build without LibTorch)";
    return w;
  }
  auto r = probe.run({worker_path, "build-info"}, timeout_ms);
  if (!r.started) {
    w["error"] = "cannot run " + worker_path + ": " + str::trim(r.err);
    return w;
  }
  w["found"] = true;
  try {
    json info = json::parse(r.out);
    if (r.rc != 0 || !info.is_object()) throw std::runtime_error("not a build-info object");
    w["build"] = info;
  } catch (const std::exception&) {
    std::string why = str::trim(r.err.empty() ? r.out : r.err);
    w["error"] = "`" + worker_path + " build-info` failed (exit " + std::to_string(r.rc) + ")" +
                 (why.empty() ? std::string() : ": " + why.substr(0, 300));
  }
  return w;
}

}  // namespace mtrain::envreport

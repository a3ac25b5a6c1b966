// The environment variables that change what mtrain, c10d, Gloo and NCCL do: mtrain's own
// (MTRAIN_*, one per registry setting, parsed by the registry so a bad value shows here), and
// the well-known ones of the libraries it drives. Each entry says who reads it and its source.
#include <fstream>

#include "lib/config/registry.hpp"
#include "lib/config/resolve_job.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"

namespace mtrain::envreport {

namespace {

struct Known {
  const char* name;
  const char* used_by;
  const char* meaning;
};

constexpr Known kKnown[] = {
    {"CUDA_VISIBLE_DEVICES", "CUDA", "GPUs this process may use (mtrain launch selects from them)"},
    {"OMP_NUM_THREADS", "OpenMP/LibTorch", "threads per rank (mtrain launch sets cores/ranks when unset)"},
    {"MASTER_ADDR", "c10d", "rank 0's address (set per rank by the launcher)"},
    {"MASTER_PORT", "c10d", "rank 0's store port (set per rank by the launcher)"},
    {"RANK", "c10d", "global rank (set per rank by the launcher)"},
    {"WORLD_SIZE", "c10d", "number of ranks (set per rank by the launcher)"},
    {"LOCAL_RANK", "c10d", "rank on this node (set per rank by the launcher)"},
    {"TORCH_DISTRIBUTED_DEBUG", "c10d", "OFF, INFO or DETAIL: collective checks and logs"},
    {"TORCH_CPP_LOG_LEVEL", "LibTorch", "INFO shows c10d's C++ logs"},
    {"GLOO_SOCKET_IFNAME", "Gloo", "network interface Gloo binds to"},
    {"TP_SOCKET_IFNAME", "TensorPipe", "network interface TensorPipe binds to"},
    {"NCCL_SOCKET_IFNAME", "NCCL", "interfaces NCCL may use (prefix match, ^ excludes, = exact)"},
    {"NCCL_DEBUG", "NCCL", "WARN or INFO: NCCL's own diagnostics"},
    {"NCCL_DEBUG_SUBSYS", "NCCL", "subsystems NCCL_DEBUG logs"},
    {"NCCL_IB_DISABLE", "NCCL", "1: no InfiniBand/RoCE, sockets only"},
    {"NCCL_IB_HCA", "NCCL", "InfiniBand adapters NCCL may use"},
    {"NCCL_P2P_DISABLE", "NCCL", "1: no peer-to-peer GPU transfers"},
    {"NCCL_SHM_DISABLE", "NCCL", "1: no shared-memory transport"},
    {"NCCL_NET_GDR_LEVEL", "NCCL", "when GPUDirect RDMA is used"},
    {"NCCL_ALGO", "NCCL", "forces Ring, Tree, …"},
    {"NCCL_PROTO", "NCCL", "forces LL, LL128 or Simple"},
    {"NCCL_BLOCKING_WAIT", "c10d", "1: collectives block and time out as errors"},
    {"NCCL_ASYNC_ERROR_HANDLING", "c10d", "1: a failed collective aborts the process"},
    {"TORCH_NCCL_ASYNC_ERROR_HANDLING", "c10d", "1: a failed collective aborts the process"},
};

}  // namespace

json probe_environment(const std::map<std::string, std::string>& env) {
  json out = json::array();
  const auto& reg = config::job_registry();
  // mtrain's own: every MTRAIN_* that is set, checked against the registry.
  std::vector<std::string> known_names;
  for (const auto& s : reg.all()) known_names.push_back(s.env);
  for (const auto& [name, value] : env) {
    if (!str::starts_with(name, "MTRAIN_")) continue;
    json e = {{"name", name}, {"value", value}, {"source", "environment"}, {"used_by", "mtrain"}};
    const config::Setting* found = nullptr;
    for (const auto& s : reg.all())
      if (s.env == name) found = &s;
    if (found) {
      e["setting"] = found->key;
      e["meaning"] = found->help;
      try {
        reg.parse_text(*found, value);
      } catch (const Error& err) {
        e["problem"] = err.message();
      }
    } else {
      e["setting"] = nullptr;
      e["meaning"] = "not a setting of this mtrain";
      auto near = str::closest(name, known_names);
      e["problem"] = "unknown variable" + (near ? "; did you mean " + *near + "?" : std::string());
    }
    out.push_back(e);
  }
  for (const auto& k : kKnown) {
    auto it = env.find(k.name);
    json e = {{"name", k.name}, {"used_by", k.used_by}, {"meaning", k.meaning}};
    e["value"] = it == env.end() ? json(nullptr) : json(it->second);
    e["source"] = it == env.end() ? "unset" : "environment";
    out.push_back(e);
  }
  return out;
}

json probe_user_config(const SystemProbe& probe, const std::map<std::string, std::string>& env) {
  const std::string path = config::default_user_file(env);
  json u = {{"path", path.empty() ? json(nullptr) : json(path)}, {"exists", false}, {"settings", json::object()}};
  if (path.empty() || !probe.read_file(path)) return u;
  u["exists"] = true;
  try {
    auto layer = config::load_yaml_layer(config::job_registry(), path, config::Source::UserFile);
    for (const auto& [k, v] : layer.values) u["settings"][k] = v;
  } catch (const Error& e) {
    u["problem"] = e.message();
  }
  return u;
}

}  // namespace mtrain::envreport

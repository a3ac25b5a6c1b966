// Warnings with advice: the problems that make distributed jobs hang, crash or crawl and that a
// look at the machine can reveal before a job runs.
#include <fmt/format.h>

#include "lib/core/strings.hpp"
#include "lib/envreport/report.hpp"

namespace mtrain::envreport {

namespace {

constexpr uint64_t kMinShm = 1ull << 30;     // NCCL and DataLoader workers need far more than 64 MiB
constexpr uint64_t kMinOpenFiles = 4096;     // Gloo opens sockets per peer and per pair

std::string env_of(const std::map<std::string, std::string>& env, const std::string& k) {
  auto it = env.find(k);
  return it == env.end() ? "" : it->second;
}

std::vector<std::string> interface_names(const json& report) {
  std::vector<std::string> names;
  for (const auto& n : report.at("network")) names.push_back(n.at("name").get<std::string>());
  return names;
}

// NCCL_SOCKET_IFNAME grammar: comma list; leading '^' excludes, leading '=' means exact names,
// otherwise each entry is a prefix. Returns the entries that match no interface (an exclusion
// list matches nothing by design, so it returns none).
// The entries of a comma list of interface names that match no interface of this host: each entry
// is a prefix of an interface name, or the whole name when `exact`.
std::vector<std::string> unmatched(const std::string& list, const std::vector<std::string>& names, bool exact) {
  std::vector<std::string> missing;
  for (auto part : str::split(list, ',')) {
    part = str::trim(part);
    if (part.empty()) continue;
    bool hit = false;
    for (const auto& n : names) hit = hit || (exact ? n == part : str::starts_with(n, part));
    if (!hit) missing.push_back(part);
  }
  return missing;
}

// NCCL_SOCKET_IFNAME grammar: comma list; leading '^' excludes, leading '=' means exact names,
// otherwise each entry is a prefix. An exclusion list matches nothing by design: none missing.
std::vector<std::string> unmatched_nccl(const std::string& spec, const std::vector<std::string>& names) {
  if (!spec.empty() && spec[0] == '^') return {};
  if (!spec.empty() && spec[0] == '=') return unmatched(spec.substr(1), names, true);
  return unmatched(spec, names, false);
}

// Ranks this node would run by default: MTRAIN_NPROC_PER_NODE when it is a count, else one per
// GPU, else one.
int expected_local_ranks(const json& report, const std::map<std::string, std::string>& env) {
  if (auto n = str::parse_uint(env_of(env, "MTRAIN_NPROC_PER_NODE")); n && *n > 0) return static_cast<int>(*n);
  size_t gpus = report.at("gpus").at("devices").size();
  return gpus > 0 ? static_cast<int>(gpus) : 1;
}

}  // namespace

std::string blas_kind(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  if (path.find("openblas") != std::string::npos) return "OpenBLAS";
  if (path.find("blis") != std::string::npos) return "BLIS";
  if (path.find("mkl") != std::string::npos) return "MKL";
  if (str::starts_with(base, "libblas.so") && path.find("/blas/") != std::string::npos) return "reference BLAS (netlib)";
  return "unknown BLAS";
}

namespace {

// The list the checks below append to: each warning is what is wrong and what to do about it.
class Warnings {
 public:
  void add(std::string what, std::string advice) { w_.push_back({{"what", what}, {"advice", advice}}); }
  json take() { return std::move(w_); }

 private:
  json w_ = json::array();
};

void check_shm(const json& report, Warnings& w) {
  const auto& shm = report.at("shm");
  if (!shm.at("mounted").get<bool>()) {
    w.add("/dev/shm is not mounted", "NCCL and data-loader workers need shared memory: mount a tmpfs on /dev/shm.");
  } else if (shm.at("total_bytes").get<uint64_t>() < kMinShm) {
    w.add(fmt::format("/dev/shm is only {} (containers default to 64 MiB)",
                      human_bytes(shm.at("total_bytes").get<double>(), 1)),
          "NCCL's shared-memory transport and data-loader workers fail with bus errors when it fills: run the "
          "container with --shm-size=8g (or --ipc=host), or `mount -o remount,size=8G /dev/shm`.");
  }
}

void check_threads(const json& report, const std::map<std::string, std::string>& env, Warnings& w) {
  const int cores = report.at("cpu").at("cores").get<int>();
  if (auto t = str::parse_uint(env_of(env, "OMP_NUM_THREADS")); t && *t > 0) {
    const int ranks = expected_local_ranks(report, env);
    if (*t * ranks > cores) {
      w.add(fmt::format("OMP_NUM_THREADS={} with {} rank(s) on this node asks for {} threads on {} core(s)", *t, ranks,
                        *t * ranks, cores),
            fmt::format("Oversubscribed cores make every rank slow: unset OMP_NUM_THREADS (mtrain launch then sets "
                        "cores/ranks = {} per rank) or lower it.",
                        std::max(1, cores / ranks)));
    }
  } else if (!env_of(env, "OMP_NUM_THREADS").empty()) {
    w.add(fmt::format("OMP_NUM_THREADS='{}' is not a positive count", env_of(env, "OMP_NUM_THREADS")),
          "Set a number such as 4, or unset it and let mtrain launch choose.");
  }
}

// The socket interfaces NCCL, Gloo and TensorPipe are told to use, and whether any is routable.
void check_network(const json& report, const std::map<std::string, std::string>& env, Warnings& w) {
  const auto names = interface_names(report);
  const std::string nccl_if = env_of(env, "NCCL_SOCKET_IFNAME");
  if (!nccl_if.empty()) {
    auto missing = unmatched_nccl(nccl_if, names);
    if (!missing.empty())
      w.add(fmt::format("NCCL_SOCKET_IFNAME={} names no interface of this host ({} matches nothing)", nccl_if,
                        str::join(missing, ", ")),
            fmt::format("NCCL will fail to find a socket interface: use one of {} (see the network section).",
                        str::join(names, ", ")));
  }
  for (const char* var : {"GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"}) {
    const std::string v = env_of(env, var);
    if (v.empty()) continue;
    auto missing = unmatched(v, names, true);
    if (!missing.empty())
      w.add(fmt::format("{}={} names no interface of this host ({} not found)", var, v, str::join(missing, ", ")),
            fmt::format("Gloo cannot bind to it and the job fails at start: use one of {}.", str::join(names, ", ")));
  }
  bool routable = false;
  for (const auto& n : report.at("network"))
    routable = routable || (n.at("up").get<bool>() && !n.at("loopback").get<bool>() && !n.at("addresses").empty());
  if (!routable)
    w.add("no network interface other than loopback is up", "Jobs can run on this machine only; multi-node jobs need a routable interface.");
}

void check_limits_and_gpus(const json& report, const std::map<std::string, std::string>& env, Warnings& w) {
  const auto& lim = report.at("limits");
  if (!lim.at("open_files_soft").is_null() && lim.at("open_files_soft").get<uint64_t>() < kMinOpenFiles)
    w.add(fmt::format("the open-file limit (ulimit -n) is {}", lim.at("open_files_soft").get<uint64_t>()),
          "Gloo and NCCL open sockets per peer and large jobs run out: `ulimit -n 65536` (up to the hard limit) or "
          "raise nofile in /etc/security/limits.conf.");

  const auto& gpus = report.at("gpus");
  const std::string cvd = env_of(env, "CUDA_VISIBLE_DEVICES");
  if (gpus.at("devices").empty() && env.count("CUDA_VISIBLE_DEVICES") && !cvd.empty())
    w.add(fmt::format("CUDA_VISIBLE_DEVICES={} is set but no GPU was found", cvd),
          "Ranks will run on CPU; check the NVIDIA driver (nvidia-smi) or unset the variable.");
}

// The bundled trainer: missing, or linked against the slow reference BLAS.
void check_worker(const json& report, Warnings& w) {
  const auto& worker = report.at("mtrain").at("worker");
  if (worker.contains("build") && worker.at("build").contains("blas") && worker.at("build").at("blas").is_string()) {
    const std::string blas = worker.at("build").at("blas").get<std::string>();
    if (!blas.empty() && blas_kind(blas) == "reference BLAS (netlib)")
      w.add(fmt::format("the bundled trainer's matrix products run on the reference BLAS ({})", blas),
            "It is several times slower than an optimised one: install OpenBLAS (`apt-get install libopenblas0-openmp`; "
            "Debian then points libblas.so.3 at it) or select one with `update-alternatives --config "
            "libblas.so.3-x86_64-linux-gnu`.");
  }
  if (worker.contains("error"))
    w.add(worker.at("error").get<std::string>(),
          "Only `mtrain launch -- PROGRAM` works without it; build mtrain with LibTorch for the bundled trainer and "
          "`mtrain bench comm`.");
}

// What the report's other sections found wrong with mtrain's own inputs.
void check_inputs(const json& report, Warnings& w) {
  for (const auto& e : report.at("environment"))
    if (e.contains("problem"))
      w.add(fmt::format("{}={}: {}", e.at("name").get<std::string>(), e.at("value").get<std::string>(),
                        e.at("problem").get<std::string>()),
            "Fix or unset the variable: mtrain launch refuses bad MTRAIN_* values.");
  if (report.at("user_config").contains("problem"))
    w.add(report.at("user_config").at("problem").get<std::string>(), "Fix the user config file or remove it.");
  if (report.at("slurm").contains("error"))
    w.add("the Slurm environment is inconsistent: " + report.at("slurm").at("error").get<std::string>(),
          "Run mtrain inside an `srun`/`sbatch` step started normally; stale SLURM_* variables can be unset.");
  if (report.contains("rendezvous")) {
    const auto& r = report.at("rendezvous");
    if (r.contains("error")) {
      w.add("the etcd rendezvous: " + r.at("error").get<std::string>(),
            "Give the members as --rdzv-endpoint host1:2379,host2:2379,host3:2379.");
    } else if (r.contains("members")) {
      std::vector<std::string> down;
      for (const auto& m : r.at("members"))
        if (!m.at("answered").get<bool>()) down.push_back(m.at("endpoint").get<std::string>());
      if (!down.empty())
        w.add(fmt::format("{} of {} etcd members did not answer: {}", down.size(), r.at("members").size(),
                          str::join(down, ", ")),
              down.size() == r.at("members").size()
                  ? "No node can join the rendezvous: start the etcd cluster or fix --rdzv-endpoint (etcdctl endpoint "
                    "health)."
                  : "The job still runs while a majority answers; bring the member back before another fails.");
    }
  }
}

}  // namespace

json compute_warnings(const json& report, const std::map<std::string, std::string>& env) {
  Warnings w;
  check_shm(report, w);
  check_threads(report, env, w);
  check_network(report, env, w);
  check_limits_and_gpus(report, env, w);
  check_worker(report, w);
  check_inputs(report, w);
  return w.take();
}

}  // namespace mtrain::envreport

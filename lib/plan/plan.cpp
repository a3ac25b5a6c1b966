#include "mtrain/plan/plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "mtrain/core/error.hpp"
#include "mtrain/core/strings.hpp"
#include "mtrain/topology/filter.hpp"
#include "mtrain/topology/gpu_list.hpp"

namespace mtrain::plan {

namespace {

using topology::format_gpu_list;

std::string pool_text(const HostFacts& f) {
  if (f.gpu_pool.empty()) return "this host has no GPUs";
  return fmt::format("available GPUs ({}): {}", f.gpu_pool_source, format_gpu_list(f.gpu_pool));
}

// The GPUs this node uses, from --gpus / --include / --exclude over the pool. `explicit_sel`
// tells whether the user chose them (then the rank count must match) or took the whole pool.
std::vector<int> select_gpus(const PlanOptions& o, const HostFacts& f, bool& explicit_sel) {
  int given = !o.gpus.empty() + !o.include.empty() + !o.exclude.empty();
  if (given > 1)
    throw Error("--gpus, --include and --exclude select GPUs in different ways and cannot be combined",
                "Use one of them.");
  explicit_sel = given == 1;
  if (o.nproc_per_node == "cpu") {
    if (explicit_sel)
      throw Error("--nproc-per-node cpu runs CPU ranks, but GPUs were selected too",
                  "Drop the GPU selection or choose a rank count.");
    return {};
  }
  if (!explicit_sel) return f.gpu_pool;
  if (f.gpu_pool.empty())
    throw Error(fmt::format("GPUs were selected ({}) but {}",
                            !o.gpus.empty() ? "--gpus " + o.gpus
                                            : !o.include.empty() ? "--include " + o.include
                                                                 : "--exclude " + o.exclude,
                            pool_text(f)),
                "Run CPU ranks with --nproc-per-node N (or cpu), or check CUDA_VISIBLE_DEVICES.");
  if (!o.gpus.empty()) {
    auto ids = topology::parse_gpu_list(o.gpus, "--gpus");
    for (int id : ids)
      if (std::find(f.gpu_pool.begin(), f.gpu_pool.end(), id) == f.gpu_pool.end())
        throw Error(fmt::format("--gpus {}: GPU {} is not available; {}", o.gpus, id, pool_text(f)),
                    "Pick GPUs from that list.");
    return ids;
  }
  topology::Inventory inv{{"localhost", "", f.gpu_pool}};
  std::sort(inv[0].slots.begin(), inv[0].slots.end());
  auto sel = !o.include.empty() ? topology::apply_include(inv, o.include)
                                : topology::apply_exclude(inv, o.exclude);
  return sel.at(0).slots;
}

int rank_count(const PlanOptions& o, const HostFacts& f, std::vector<int>& gpus, bool explicit_sel) {
  const std::string& n = o.nproc_per_node;
  if (n.empty()) return gpus.empty() ? 1 : static_cast<int>(gpus.size());
  if (n == "auto") return gpus.empty() ? std::max(1, f.cpu_count) : static_cast<int>(gpus.size());
  if (n == "cpu") return std::max(1, f.cpu_count);
  if (n == "gpu") {
    if (gpus.empty())
      throw Error("--nproc-per-node gpu: " + pool_text(f),
                  "Use --nproc-per-node N or cpu to run CPU ranks.");
    return static_cast<int>(gpus.size());
  }
  auto v = str::parse_uint(n);
  if (!v || *v == 0 || *v > 65536)
    throw Error(fmt::format("--nproc-per-node '{}' is not a rank count", n),
                "Give a positive number, or auto, cpu or gpu.");
  int count = static_cast<int>(*v);
  if (gpus.empty()) return count;
  if (explicit_sel && count != static_cast<int>(gpus.size()))
    throw Error(fmt::format("--nproc-per-node {} does not match the {} selected GPUs ({})", count,
                            gpus.size(), format_gpu_list(gpus)),
                "Select as many GPUs as ranks, or leave --nproc-per-node out.");
  if (count > static_cast<int>(gpus.size()))
    throw Error(fmt::format("--nproc-per-node {} asks for more ranks than GPUs; {}", count, pool_text(f)),
                "Use at most that many ranks, or --nproc-per-node cpu for CPU ranks.");
  gpus.resize(count);
  return count;
}

std::vector<std::string> rank_argv(const PlanOptions& o, int local_rank) {
  std::vector<std::string> argv;
  if (o.program.empty()) {
    argv = o.worker_argv;
  } else if (o.module) {
    argv = {"python3", "-m"};
    argv.insert(argv.end(), o.program.begin(), o.program.end());
  } else {
    argv = o.program;
  }
  if (o.local_rank_arg && !o.program.empty()) argv.push_back(fmt::format("--local_rank={}", local_rank));
  return argv;
}

}  // namespace

LaunchPlan build_plan(const PlanOptions& o, const HostFacts& f) {
  bool explicit_sel = false;
  std::vector<int> gpus = select_gpus(o, f, explicit_sel);
  int nproc = rank_count(o, f, gpus, explicit_sel);
  if (o.program.empty() && o.worker_argv.empty())
    throw Error("no program to launch", "Give one after `--`, e.g. `mtrain launch -- python3 train.py`.");

  if (o.nnodes < 1) throw Error(fmt::format("--nnodes {} must be at least 1", o.nnodes));
  if (o.node_rank < 0 || o.node_rank >= o.nnodes)
    throw Error(fmt::format("--node-rank {} is outside 0..{} (--nnodes {})", o.node_rank, o.nnodes - 1, o.nnodes),
                "Number the nodes 0 to nnodes-1; node 0 hosts rank 0.");
  if (o.nnodes > 1 && o.master_addr.empty())
    throw Error(fmt::format("--nnodes {} needs --master-addr: the address of node 0, where rank 0 runs", o.nnodes),
                "Give node 0's address on every node.");

  LaunchPlan p;
  p.job_id = o.job_id;
  // Static multi-node: every node has the same number of ranks, numbered contiguously per node.
  p.world_size = nproc * o.nnodes;
  p.nnodes = o.nnodes;
  p.master_addr = o.master_addr.empty() ? "127.0.0.1" : o.master_addr;
  p.master_port = o.master_port;
  p.rdzv_endpoint = fmt::format("{}:{}", p.master_addr, p.master_port);
  p.max_restarts = o.max_restarts;

  Node node;
  node.host = f.hostname;
  node.node_rank = o.node_rank;
  node.gpus = gpus;
  const std::string visible = format_gpu_list(gpus);
  const std::string omp = std::to_string(std::max(1, f.cpu_count / nproc));
  for (int lr = 0; lr < nproc; ++lr) {
    Worker w;
    w.rank = node.node_rank * nproc + lr;  // contiguous per node, in node order
    w.local_rank = lr;
    if (!gpus.empty()) w.gpu = gpus[lr];
    w.argv = rank_argv(o, lr);
    Env& e = w.env;
    e["RANK"] = std::to_string(w.rank);
    e["LOCAL_RANK"] = std::to_string(lr);
    e["WORLD_SIZE"] = std::to_string(p.world_size);
    e["LOCAL_WORLD_SIZE"] = std::to_string(nproc);
    e["GROUP_RANK"] = std::to_string(node.node_rank);
    e["GROUP_WORLD_SIZE"] = std::to_string(p.nnodes);
    e["ROLE_RANK"] = std::to_string(w.rank);  // one role: role ranks are global ranks
    e["ROLE_NAME"] = o.role.empty() ? "default" : o.role;
    e["ROLE_WORLD_SIZE"] = std::to_string(p.world_size);
    e["MASTER_ADDR"] = p.master_addr;
    e["MASTER_PORT"] = std::to_string(p.master_port);
    e["TORCHELASTIC_RESTART_COUNT"] = "0";
    e["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(o.max_restarts);
    e["TORCHELASTIC_RUN_ID"] = o.rdzv_id.empty() ? o.job_id : o.rdzv_id;
    // Rank 0 hosts the c10d store itself, so init_process_group("env://") works unchanged.
    e["TORCHELASTIC_USE_AGENT_STORE"] = "False";
    if (!o.error_file_dir.empty())
      e["TORCHELASTIC_ERROR_FILE"] = fmt::format("{}/attempt_0/{}/error.json", o.error_file_dir, w.rank);
    if (!f.omp_num_threads_set) e["OMP_NUM_THREADS"] = omp;
    e["CUDA_VISIBLE_DEVICES"] = visible;
    e["MTRAIN_JOB_ID"] = o.job_id;
    e["MTRAIN_HOST"] = f.hostname;
    e["MTRAIN_GPU"] = w.gpu ? std::to_string(*w.gpu) : "";
    node.workers.push_back(std::move(w));
  }
  p.nodes.push_back(std::move(node));
  return p;
}

Env attempt_env(const Worker& w, int attempt, const std::string& error_file_dir) {
  Env e = w.env;
  e["TORCHELASTIC_RESTART_COUNT"] = std::to_string(attempt);
  if (!error_file_dir.empty())
    e["TORCHELASTIC_ERROR_FILE"] = fmt::format("{}/attempt_{}/{}/error.json", error_file_dir, attempt, w.rank);
  return e;
}

}  // namespace mtrain::plan

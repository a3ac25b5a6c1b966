#include "lib/plan/plan.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "lib/core/counted.hpp"
#include "lib/core/error.hpp"
#include "lib/core/index_list.hpp"
#include "lib/core/strings.hpp"
#include "lib/topology/filter.hpp"
#include "lib/topology/gpu_list.hpp"
#include "lib/topology/placement.hpp"

namespace mtrain::plan {

namespace {

using topology::format_gpu_list;
using RankKind = config::RankCount::Kind;

RankKind kind_of(const PlanOptions& o) { return o.nproc_per_node ? o.nproc_per_node->kind : RankKind::Auto; }

std::string pool_text(const HostFacts& f) {
  if (f.gpu_pool.empty()) return "this host has no GPUs";
  return fmt::format("available GPUs ({}): {}", f.gpu_pool_source, format_gpu_list(f.gpu_pool));
}

// The GPUs this node uses, from --gpus / --include / --exclude over the pool. `explicit_sel`
// tells whether the user chose them (then the rank count must match) or took the whole pool.
std::vector<int> select_gpus(const PlanOptions& o, const HostFacts& f, bool& explicit_sel) {
  // --gpus all (or "") is every GPU, as if not given (core/index_list.hpp).
  std::vector<int> gpu_ids = parse_index_selection(o.gpus, "--gpus", "GPU id");
  int given = !gpu_ids.empty() + !o.include.empty() + !o.exclude.empty();
  if (given > 1)
    throw Error("--gpus, --include and --exclude select GPUs in different ways and cannot be combined",
                "Use one of them.");
  explicit_sel = given == 1;
  if (o.device == config::DeviceKind::Cpu) {
    if (explicit_sel)
      throw Error("--device cpu runs CPU ranks, but GPUs were selected too",
                  "Drop the GPU selection (--gpus/--include/--exclude) or use --device gpu.");
    if (kind_of(o) == RankKind::Gpu)
      throw Error("--device cpu with --nproc-per-node gpu asks for no GPU and one rank per GPU",
                  "Give a rank count (--nproc-per-node N or cpu), or use --device gpu.");
    return {};
  }
  if (o.device == config::DeviceKind::Gpu && f.gpu_pool.empty())
    throw Error("--device gpu: " + pool_text(f),
                "Check nvidia-smi and CUDA_VISIBLE_DEVICES on this node, or run CPU ranks with --device cpu.");
  if (kind_of(o) == RankKind::Cpu) {
    if (explicit_sel)
      throw Error("--nproc-per-node cpu runs CPU ranks, but GPUs were selected too",
                  "Drop the GPU selection or choose a rank count.");
    return {};
  }
  if (!explicit_sel) return f.gpu_pool;
  if (f.gpu_pool.empty())
    throw Error(fmt::format("GPUs were selected ({}) but {}",
                            !gpu_ids.empty() ? "--gpus " + o.gpus
                                            : !o.include.empty() ? "--include " + o.include
                                                                 : "--exclude " + o.exclude,
                            pool_text(f)),
                "Run CPU ranks with --nproc-per-node N (or cpu), or check CUDA_VISIBLE_DEVICES.");
  if (!gpu_ids.empty()) {
    for (int id : gpu_ids)
      if (std::find(f.gpu_pool.begin(), f.gpu_pool.end(), id) == f.gpu_pool.end())
        throw Error(fmt::format("--gpus {}: GPU {} is not available; {}", o.gpus, id, pool_text(f)),
                    "Pick GPUs from that list.");
    return gpu_ids;
  }
  topology::Inventory inv{{"localhost", "", f.gpu_pool}};
  std::sort(inv[0].slots.begin(), inv[0].slots.end());
  auto sel = !o.include.empty() ? topology::apply_include(inv, o.include)
                                : topology::apply_exclude(inv, o.exclude);
  return sel.at(0).slots;
}

int rank_count(const PlanOptions& o, const HostFacts& f, std::vector<int>& gpus, bool explicit_sel) {
  // Absent and auto are the same; the count is the one rule `mtrain estimate` uses too.
  const config::RankCount n = o.nproc_per_node.value_or(config::RankCount{});
  const int count = config::ranks_per_node(n, f.cpu_count, static_cast<int>(gpus.size()));
  if (n.kind == RankKind::Gpu && gpus.empty())
    throw Error("--nproc-per-node gpu: " + pool_text(f), "Use --nproc-per-node N or cpu to run CPU ranks.");
  if (n.kind != RankKind::N || gpus.empty()) return count;
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
  } else if (runs_with_python(o)) {
    // As torchrun: unbuffered, so every line reaches the console as it is printed.
    argv = {o.python, "-u"};
    if (o.module) argv.push_back("-m");
    argv.insert(argv.end(), o.program.begin(), o.program.end());
  } else {
    argv = o.program;
  }
  if (!o.program.empty()) argv.insert(argv.end(), o.extra_args.begin(), o.extra_args.end());
  if (o.local_rank_arg && !o.program.empty()) argv.push_back(fmt::format("--local_rank={}", local_rank));
  return argv;
}

// Every rank of one node: the torchrun environment of docs/architecture.md §3.
struct NodeLayout {
  std::string host;
  int node_rank = 0, nnodes = 1, first_rank = 0, world_size = 0;
  std::vector<int> gpus;  // empty: CPU ranks
  int nproc = 0;
  int cpu_count = 1;
  bool omp_set = false;
  bool nccl_async_set = false;
};

Node make_node(const PlanOptions& o, const LaunchPlan& p, const NodeLayout& l) {
  Node node;
  node.host = l.host;
  node.node_rank = l.node_rank;
  node.gpus = l.gpus;
  const std::string visible = format_gpu_list(l.gpus);
  const std::string omp = std::to_string(std::max(1, l.cpu_count / l.nproc));
  for (int lr = 0; lr < l.nproc; ++lr) {
    Worker w;
    w.rank = l.first_rank + lr;  // contiguous per node, in node order
    w.local_rank = lr;
    if (!l.gpus.empty()) w.gpu = l.gpus[lr];
    w.argv = rank_argv(o, lr);
    Env& e = w.env;
    e["RANK"] = std::to_string(w.rank);
    e["LOCAL_RANK"] = std::to_string(lr);
    e["WORLD_SIZE"] = std::to_string(l.world_size);
    e["LOCAL_WORLD_SIZE"] = std::to_string(l.nproc);
    e["GROUP_RANK"] = std::to_string(l.node_rank);
    e["GROUP_WORLD_SIZE"] = std::to_string(l.nnodes);
    // The DeepSpeed launcher's names for the same three (deepspeed/launcher/launch.py); DeepSpeed
    // reads them in the rank: LOCAL_SIZE counts its CPU devices, CROSS_* its checkpoint writer.
    e["CROSS_RANK"] = std::to_string(l.node_rank);
    e["CROSS_SIZE"] = std::to_string(l.nnodes);
    e["LOCAL_SIZE"] = std::to_string(l.nproc);
    e["ROLE_RANK"] = std::to_string(w.rank);  // one role: role ranks are global ranks
    e["ROLE_NAME"] = o.role.empty() ? "default" : o.role;
    e["ROLE_WORLD_SIZE"] = std::to_string(l.world_size);
    e["MASTER_ADDR"] = p.master_addr;
    e["MASTER_PORT"] = std::to_string(p.master_port);
    e["TORCHELASTIC_RESTART_COUNT"] = "0";
    e["TORCHELASTIC_MAX_RESTARTS"] = std::to_string(o.max_restarts);
    e["TORCHELASTIC_RUN_ID"] = o.rdzv_id.empty() ? o.job_id : o.rdzv_id;
    // Rank 0 hosts the c10d store itself, so init_process_group("env://") works unchanged.
    e["TORCHELASTIC_USE_AGENT_STORE"] = "False";
    if (!o.error_file_dir.empty()) {
      e["TORCHELASTIC_ERROR_FILE"] = fmt::format("{}/attempt_0/{}/error.json", o.error_file_dir, w.rank);
      if (o.heartbeat_file) e["MTRAIN_HEARTBEAT_FILE"] = heartbeat_file(o.error_file_dir, 0, w.rank);
    }
    if (!l.omp_set) e["OMP_NUM_THREADS"] = omp;
    // As torchrun 2.x: a NCCL error or timeout aborts the rank (the launcher sees it fail) instead
    // of leaving it hung in a collective; the user's own value is kept.
    if (!l.nccl_async_set) e["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "1";
    e["CUDA_VISIBLE_DEVICES"] = visible;
    e["MTRAIN_JOB_ID"] = o.job_id;
    e["MTRAIN_HOST"] = l.host;
    e["MTRAIN_GPU"] = w.gpu ? std::to_string(*w.gpu) : "";
    for (const auto& [k, v] : o.extra_env) e[k] = v;
    node.workers.push_back(std::move(w));
  }
  return node;
}

LaunchPlan plan_header(const PlanOptions& o, int world_size, int nnodes, const std::string& default_master) {
  LaunchPlan p;
  p.job_id = o.job_id;
  p.world_size = world_size;
  p.nnodes = nnodes;
  p.master_addr = o.master_addr.empty() ? default_master : o.master_addr;
  p.master_port = o.master_port;
  p.rdzv_backend = o.rdzv_backend;
  p.rdzv_endpoint = o.rdzv_endpoint.empty() ? fmt::format("{}:{}", p.master_addr, p.master_port) : o.rdzv_endpoint;
  p.max_restarts = o.max_restarts;
  return p;
}

}  // namespace

bool runs_with_python(const PlanOptions& o) {
  if (o.program.empty()) return false;
  return o.module || (!o.no_python && str::ends_with(o.program.front(), ".py"));
}

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

  NodeLayout l;
  l.host = o.node_name.empty() ? f.hostname : o.node_name;
  l.node_rank = o.node_rank;
  l.nnodes = o.nnodes;
  l.nproc = nproc;
  // Equal nodes unless the caller laid the world out (uneven hostfile nodes, rendezvous).
  l.first_rank = o.first_rank >= 0 ? o.first_rank : o.node_rank * nproc;
  l.world_size = o.world_size > 0 ? o.world_size : nproc * o.nnodes;
  if (l.first_rank + nproc > l.world_size)
    throw Error(fmt::format("node {} would hold ranks {}..{} but the world has {}", o.node_rank, l.first_rank,
                            l.first_rank + nproc - 1, counted(l.world_size, "rank")),
                "Every node must run as many ranks as the hostfile gives it.");
  l.gpus = gpus;
  l.cpu_count = f.cpu_count;
  l.omp_set = f.omp_num_threads_set;
  l.nccl_async_set = f.nccl_async_error_handling_set;
  LaunchPlan p = plan_header(o, l.world_size, o.nnodes, "127.0.0.1");
  p.nodes.push_back(make_node(o, p, l));
  return p;
}

LaunchPlan build_cluster_plan(const PlanOptions& o, const std::vector<ClusterNode>& nodes, const HostFacts& f) {
  if (nodes.empty()) throw Error("no hosts left to run on", "Check the hostfile and the --include/--exclude filters.");
  if (o.program.empty() && o.worker_argv.empty())
    throw Error("no program to launch", "Give one after `--`, e.g. `mtrain launch -- python3 train.py`.");
  std::vector<std::pair<std::string, int>> counts;
  counts.reserve(nodes.size());
  for (const auto& n : nodes) counts.emplace_back(n.host, static_cast<int>(n.slots.size()));
  auto placement = topology::place_ranks(counts);
  LaunchPlan p = plan_header(o, placement.world_size, static_cast<int>(nodes.size()), nodes.front().host);
  for (size_t k = 0; k < nodes.size(); ++k) {
    NodeLayout l;
    l.host = nodes[k].host;
    l.node_rank = static_cast<int>(k);
    l.nnodes = static_cast<int>(nodes.size());
    l.first_rank = placement.nodes[k].first_rank;
    l.world_size = placement.world_size;
    l.nproc = placement.nodes[k].local_world_size;
    if (kind_of(o) != RankKind::Cpu) l.gpus = nodes[k].slots;
    l.cpu_count = f.cpu_count;
    l.omp_set = f.omp_num_threads_set;
    l.nccl_async_set = f.nccl_async_error_handling_set;
    p.nodes.push_back(make_node(o, p, l));
  }
  return p;
}

std::string heartbeat_file(const std::string& run_dir, int attempt, int rank) {
  return fmt::format("{}/attempt_{}/{}/heartbeat", run_dir, attempt, rank);
}

Env attempt_env(const Worker& w, int attempt, const std::string& error_file_dir) {
  Env e = w.env;
  e["TORCHELASTIC_RESTART_COUNT"] = std::to_string(attempt);
  if (!error_file_dir.empty()) {
    e["TORCHELASTIC_ERROR_FILE"] = fmt::format("{}/attempt_{}/{}/error.json", error_file_dir, attempt, w.rank);
    if (e.count("MTRAIN_HEARTBEAT_FILE")) e["MTRAIN_HEARTBEAT_FILE"] = heartbeat_file(error_file_dir, attempt, w.rank);
  }
  return e;
}

std::vector<int> selected_gpus(const PlanOptions& o, const HostFacts& f) {
  bool explicit_sel = false;
  return select_gpus(o, f, explicit_sel);
}

}  // namespace mtrain::plan

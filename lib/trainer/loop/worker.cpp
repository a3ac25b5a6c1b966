#include "lib/trainer/loop/worker.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "lib/config/launch_checks.hpp"
#include "lib/config/registry.hpp"
#include "lib/core/counted.hpp"
#include "lib/core/error.hpp"
#include "lib/core/input_limits.hpp"
#include "lib/core/strings.hpp"
#include "lib/core/work_dir_lock.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/loop/elastic_resume.hpp"
#include "lib/trainer/loop/failure_record.hpp"
#include "lib/trainer/loop/preemption.hpp"
#include "lib/trainer/loop/trainer.hpp"
#include "lib/trainer/checkpoint/checkpointer.hpp"

namespace mtrain::trainer {

using nlohmann::json;

namespace {

const char* const kEnvVars[] = {"RANK",        "WORLD_SIZE",      "LOCAL_RANK", "MASTER_ADDR",
                                "MASTER_PORT", "OMP_NUM_THREADS", "MTRAIN_JOB_ID",
                                "TORCHELASTIC_RESTART_COUNT", "LOCAL_WORLD_SIZE",
                                "MTRAIN_HEARTBEAT_FILE", "TORCHELASTIC_ERROR_FILE", "TORCHELASTIC_MAX_RESTARTS",
                                "MTRAIN_RDZV_ROUND", "MTRAIN_RESTART_REASON", "MTRAIN_LOST_NODES", "GLOO_SOCKET_IFNAME"};

std::string env_or(const WorkerOptions& o, const std::string& k, const std::string& def) {
  auto it = o.env.find(k);
  return it == o.env.end() || it->second.empty() ? def : it->second;
}

int env_int(const WorkerOptions& o, const std::string& k, int def) {
  const std::string v = env_or(o, k, "");
  if (v.empty()) return def;
  try {
    size_t used = 0;
    const long n = std::stol(v, &used);
    if (used != v.size() || n < 0) throw std::invalid_argument(v);
    return static_cast<int>(n);
  } catch (const std::exception&) {
    throw UsageError(fmt::format("environment variable {}='{}' is not a non-negative integer", k, v),
                     "the launcher sets it; when starting mtrain-worker by hand, export a number");
  }
}

// The job file as written, with --set applied on top; train_job_from_json fills the defaults and
// checks every value once.
json read_job(const WorkerOptions& o) {
  const auto& reg = config::job_registry();
  json job = json::object();
  if (!o.job_path.empty()) {
    const auto text = read_input_file(o.job_path);  // size limit
    if (!text) {
      throw UsageError(fmt::format("{}: cannot read the job file", o.job_path),
                       "pass the resolved job JSON that `mtrain launch` writes, or omit --job to use "
                       "the defaults");
    }
    try {
      job = parse_json_limited(*text, o.job_path);  // depth limit
    } catch (const json::exception& e) {
      throw UsageError(fmt::format("{}: not valid JSON ({})", o.job_path, e.what()),
                       "the job file is the nested JSON of job settings");
    }
    if (!job.is_object()) throw UsageError(fmt::format("{}: a job spec must be a JSON object", o.job_path));
  }
  for (const auto& kv : o.sets) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      throw UsageError(fmt::format("--set '{}' is not key=value", kv), "e.g. --set train.max_steps=50");
    }
    const std::string key = str::trim(kv.substr(0, eq));
    const auto& s = reg.require(key);
    config::set(job, key, reg.parse_text(s, kv.substr(eq + 1)));
  }
  return job;
}

// Where this rank stands in the group, from the torchrun environment (none = world 1).
struct RankPlace {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
};

RankPlace rank_place(const WorkerOptions& o) {
  const RankPlace p{env_int(o, "RANK", 0), env_int(o, "WORLD_SIZE", 1), env_int(o, "LOCAL_RANK", 0)};
  if (p.world < 1 || p.rank >= p.world) {
    throw UsageError(fmt::format("RANK={} and WORLD_SIZE={}: rank {} is outside the world", p.rank, p.world, p.rank),
                     "RANK must be in [0, WORLD_SIZE); the launcher sets both");
  }
  return p;
}

// A run that fails before it writes anything (bad model, data or init file) leaves no trace: a
// work dir that this run created and that holds nothing but the lock is removed on the way out.
struct RemoveIfOnlyLock {
  std::string dir;
  ~RemoveIfOnlyLock() {
    if (dir.empty()) return;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().filename() != ".mtrain.lock") return;
    if (ec) return;
    std::filesystem::remove(std::filesystem::path(dir) / ".mtrain.lock", ec);
    std::filesystem::remove(dir, ec);
  }
};

// checkpoint.overwrite: every step_<N> of an earlier run goes, each renamed to a .del_step_ folder
// first, so a crash midway leaves only what remove_abandoned_saves clears at the next start.
void remove_earlier_checkpoints(const std::string& root, std::ostream& console) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  std::vector<std::string> removed;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step_", 0) == 0 && e.is_directory(ec)) removed.push_back(name);
  }
  std::sort(removed.begin(), removed.end());
  for (const auto& name : removed) {
    const fs::path trash = fs::path(root) / (".del_" + name + ".overwrite");
    fs::remove_all(trash, ec);
    fs::rename(fs::path(root) / name, trash, ec);
    if (ec)
      throw RuntimeFailure(fmt::format("checkpoint.overwrite: cannot remove {}/{}: {}", root, name, ec.message()),
                           "check the work dir's permissions, or train into a fresh --work-dir");
    fs::remove_all(trash, ec);
  }
  if (!removed.empty())
    console << fmt::format("mtrain-worker: checkpoint.overwrite: removed the earlier run's checkpoints from {} ({})\n",
                           root, str::join(removed, ", "));
}

// One job per work dir (work_dir_lock.hpp): rank 0 holds the lock for the whole run, and
// saves interrupted by a dead job's crash are removed only once the lock is ours. The members'
// order is the protocol: the lock is released before the cleanup looks at the dir, also when
// taking the lock throws.
class WorkDirClaim {
 public:
  // `overwrite`: a fresh run with checkpoint.overwrite, whose launch accepted the earlier run's
  // checkpoints only because they go now (config/launch_checks.hpp, earlier_run_problems).
  WorkDirClaim(const std::string& work_dir, int rank, const std::string& job_id, bool overwrite, std::ostream& console) {
    if (rank != 0) return;
    std::error_code exists_ec;
    if (!std::filesystem::exists(work_dir, exists_ec)) cleanup_.dir = work_dir;
    std::string notice;
    lock_ = WorkDirLock::acquire(work_dir, job_id, &notice);
    if (!notice.empty()) console << "mtrain-worker: notice: " << notice << "\n";
    remove_abandoned_saves(work_dir + "/checkpoints");
    if (overwrite) remove_earlier_checkpoints(work_dir + "/checkpoints", console);
  }
  WorkDirClaim(const WorkDirClaim&) = delete;
  WorkDirClaim& operator=(const WorkDirClaim&) = delete;

 private:
  RemoveIfOnlyLock cleanup_;
  std::unique_ptr<WorkDirLock> lock_;
};

// CUDA when this worker has it and this rank sees a device. The launcher decides what a rank
// sees (--device cpu: CUDA_VISIBLE_DEVICES is empty; gpu/auto: the node's selected GPUs, which
// LOCAL_RANK indexes), so the worker needs no device setting of its own.
at::Device select_device(int local_rank) {
  const int gpus = compat::cuda_device_count();
  if (gpus <= 0 || !compat::nccl_available()) return at::kCPU;
  if (local_rank >= gpus) {
    throw UsageError(fmt::format("local rank {} has no GPU: this node shows {} CUDA device(s)", local_rank, gpus),
                     "run at most one rank per GPU (--nproc-per-node gpu), or --device cpu");
  }
  compat::select_cuda_device(local_rank);
  return at::Device(at::kCUDA, static_cast<at::DeviceIndex>(local_rank));
}

CommOptions comm_options(const TrainJob& tj, const WorkerOptions& o, const RankPlace& place, const at::Device& device) {
  CommOptions co;
  co.rank = place.rank;
  co.world = place.world;
  co.timeout = std::chrono::milliseconds(static_cast<int64_t>(tj.comm_timeout_s * 1000));
  co.stopping = [] { return pending_stop_signal() != 0; };
  if (device.is_cuda()) co.backend = BackendKind::Nccl;
  co.shared_memory = tj.comm_shared_memory && device.is_cpu() && place.world > 1 &&
                     env_int(o, "LOCAL_WORLD_SIZE", 0) == place.world;
  const std::string addr = env_or(o, "MASTER_ADDR", "127.0.0.1");
  if (addr == "127.0.0.1" || addr == "localhost") co.hostname = "127.0.0.1";
  // As torch.distributed: GLOO_SOCKET_IFNAME=eth0[,eth1] binds Gloo to those interfaces.
  for (const auto& iface : str::split(env_or(o, "GLOO_SOCKET_IFNAME", ""), ','))
    if (!str::trim(iface).empty()) co.interfaces.push_back(str::trim(iface));
  return co;
}

// The group's store: rank 0 serves it at MASTER_ADDR:MASTER_PORT; a world of one needs none.
compat::StorePtr make_store(const WorkerOptions& o, const CommOptions& co) {
  if (co.world <= 1) return compat::make_hash_store();
  const int port = env_int(o, "MASTER_PORT", 29500);
  if (port < 1 || port > 65535) {
    throw UsageError(fmt::format("MASTER_PORT={} is not a TCP port", port),
                     "use a port in 1..65535 that rank 0's host can listen on");
  }
  return compat::make_tcp_store(env_or(o, "MASTER_ADDR", "127.0.0.1"), port, co.rank == 0, co.world, co.timeout);
}

// This run's token names its temporary checkpoint folders (.tmp_step_<N>.<token>), so that a
// save only ever removes its own: rank 0 draws it, the others read it from the store.
std::string share_run_token(const compat::StorePtr& store, int rank) {
  if (rank == 0) {
    std::string token = fmt::format("{:08x}", std::random_device{}());
    store->set("mtrain/run_token", std::vector<uint8_t>(token.begin(), token.end()));
    return token;
  }
  const auto bytes = store->get("mtrain/run_token");
  return std::string(bytes.begin(), bytes.end());
}

TrainerParts make_parts(const TrainJob& tj, const WorkerOptions& o, const at::Device& device) {
  TrainerParts parts;
  parts.model = make_model(tj.model, tj.seed);
  parts.model->to(device);
  // fsdp.activation_checkpointing is honoured by every strategy: recomputing blocks is a model
  // property, independent of how the state is sharded.
  parts.model->set_activation_checkpointing(tj.model.activation_checkpointing);
  parts.train = make_dataset(tj.data, tj.model, Split::Train, tj.seed);
  std::shared_ptr<const Dataset> val = make_dataset(tj.data, tj.model, Split::Val, tj.seed);
  if (val->size() > 0) parts.val = val;
  parts.device = device;
  parts.heartbeat_file = env_or(o, "MTRAIN_HEARTBEAT_FILE", "");
  parts.error_file = env_or(o, "TORCHELASTIC_ERROR_FILE", "");
  return parts;
}

// How the ranks talk, for rank 0's first line.
std::string transport_text(const CommOptions& co, const Communicator& comm) {
  if (co.backend == BackendKind::Nccl) return "nccl";
  if (comm.uses_shared_memory()) return "gloo, fp32 collectives in shared memory";
  if (!comm.shared_memory_fallback().empty())
    return "gloo; shared-memory collectives unavailable: " + comm.shared_memory_fallback() +
           ", so every collective goes over TCP (slower)";
  return "gloo";
}

}  // namespace

std::map<std::string, std::string> worker_env_from_process() {
  std::map<std::string, std::string> env;
  for (const char* k : kEnvVars) {
    if (const char* v = std::getenv(k)) env[k] = v;
  }
  return env;
}

int run_worker(const WorkerOptions& o, std::ostream& console) {
  // From here on SIGUSR1/SIGTERM/SIGINT end the run at the next step boundary with a checkpoint
  // (preemption.hpp); a rank still joining the group only notices then (the launcher escalates
  // to SIGKILL after its grace period).
  install_stop_signal_handlers();
  TrainJob tj = train_job_from_json(read_job(o), o.job_path.empty() ? "the job" : o.job_path);
  // HYBRID_SHARD's shard group is the ranks of this node; the strategy reads only its options.
  tj.strat.local_world_size = env_int(o, "LOCAL_WORLD_SIZE", 0);
  const RankPlace place = rank_place(o);
  // A restarted attempt resumes by itself and keeps the global batch at this world size.
  const RestartInfo restart = restart_info_from_env(o.env);
  const std::vector<std::string> restart_notes = apply_restart(tj, place.world, restart);
  if (place.rank == 0)
    for (const auto& n : restart_notes) console << "mtrain-worker: " << n << "\n";
  const WorkDirClaim claim(tj.work_dir, place.rank, env_or(o, "MTRAIN_JOB_ID", ""), tj.overwrite && !tj.resume.given(),
                           console);
  // A fresh run (not resumed, not a restarted attempt: apply_restart resumes those) beside another
  // run's checkpoints: the launcher refuses it before any rank starts, except on a node that joins
  // through the rendezvous (config/launch_checks.hpp); rank 0 of such a job refuses it here.
  if (place.rank == 0 && !tj.resume.given() && !tj.overwrite)
    for (const auto& p : config::earlier_run_problems(tj.settings))
      if (p.error) throw UsageError(p.message, p.hint);
  const int threads = tj.threads > 0 ? static_cast<int>(tj.threads) : env_int(o, "OMP_NUM_THREADS", 0);
  if (threads > 0) at::set_num_threads(threads);

  const at::Device device = select_device(place.local_rank);
  const CommOptions co = comm_options(tj, o, place, device);
  const compat::StorePtr store = make_store(o, co);
  Communicator comm(store, co);
  const std::string run_token = share_run_token(store, place.rank);
  TrainerParts parts = make_parts(tj, o, device);
  parts.run_token = run_token;
  parts.restart = restart;
  if (place.rank == 0) {
    console << fmt::format("mtrain-worker: {} on world {} ({}), model {} ({} data), {}, work_dir {}\n",
                           config::to_string(tj.strategy), place.world, transport_text(co, comm),
                           config::to_string(tj.model.name), config::to_string(tj.data.name), counted(at::get_num_threads(), "thread"),
                           tj.work_dir);
  }
  // Recorded here, while the communicator and the store still live: their teardown on the way
  // out can take a while, and a peer may fail meanwhile (failure_record.hpp).
  try {
    const TrainResult r = train(tj, comm, parts, console);
    return r.stopped_by != 0 ? 128 + r.stopped_by : 0;
  } catch (const std::exception& e) {
    record_failure(o.env, e);
    throw;
  }
}

}  // namespace mtrain::trainer

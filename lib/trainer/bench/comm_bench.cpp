#include "lib/trainer/bench/comm_bench.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/core/atomic_file.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/trainer/comm/communicator.hpp"
#include "lib/trainer/comm/compat.hpp"

namespace mtrain::trainer {

using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "barrier"};

int env_int(const std::map<std::string, std::string>& env, const char* k, int def) {
  auto it = env.find(k);
  if (it == env.end() || it->second.empty()) return def;
  auto v = str::parse_uint(it->second);
  if (!v)
    throw UsageError(fmt::format("environment variable {}='{}' is not a non-negative integer", k, it->second),
                     "mtrain launch sets it; when starting mtrain-worker by hand, export a number");
  return static_cast<int>(*v);
}

void device_sync(const at::Device& d) { compat::device_synchronize(d); }

// The value every rank can predict: element i of rank r's input is (r+1)·(1 + i mod 7); small
// integers, so every sum below is exact in float32.
at::Tensor pattern(int64_t start, int64_t len, const at::Device& d) {
  auto i = at::arange(start, start + len, at::TensorOptions().dtype(at::kLong).device(d));
  return (i.remainder(7) + 1).to(at::kFloat);
}

// max |buf[j] − scale·pattern(start + j)|, in chunks so a 1 GiB buffer needs no 1 GiB temporary.
double max_error(const at::Tensor& buf, int64_t start, double scale) {
  constexpr int64_t kChunk = 1 << 22;
  double err = 0;
  for (int64_t off = 0; off < buf.numel(); off += kChunk) {
    const int64_t len = std::min(kChunk, buf.numel() - off);
    auto diff = (buf.narrow(0, off, len) - pattern(start + off, len, buf.device()) * scale).abs().max();
    err = std::max(err, diff.item<double>());
  }
  return err;
}

// One op at one size: its buffers, how to fill them, run it once, and check the result.
struct Case {
  std::string op;
  int64_t count = 0;  // elements of the full (world-sized) buffer
  at::Tensor in, out;
  Communicator* comm = nullptr;

  void fill() {
    const int r = comm->rank();
    const int64_t n = in.numel();
    if (op == "broadcast") {
      if (r == 0) in.copy_(pattern(0, n, in.device()));
      else in.fill_(-1);
      return;
    }
    // all_gather's input is rank r's chunk; the pattern continues across chunks.
    in.copy_(pattern(op == "all_gather" ? r * n : 0, n, in.device()) * static_cast<double>(r + 1));
  }
  void run() {
    if (op == "all_reduce") comm->all_reduce(in).wait();
    else if (op == "all_gather") comm->all_gather(in, out).wait();
    else if (op == "reduce_scatter") comm->reduce_scatter(in, out).wait();
    else if (op == "broadcast") comm->broadcast(in, 0).wait();
    else comm->barrier();
  }
  double check() {
    const int w = comm->world(), r = comm->rank();
    const double tri = w * (w + 1) / 2.0;
    if (op == "all_reduce") return max_error(in, 0, tri);
    if (op == "broadcast") return max_error(in, 0, 1);
    if (op == "reduce_scatter") return max_error(out, r * out.numel(), tri);
    if (op == "all_gather") {
      const int64_t k = in.numel();
      double err = 0;
      for (int s = 0; s < w; ++s) err = std::max(err, max_error(out.narrow(0, s * k, k), s * k, s + 1.0));
      return err;
    }
    return 0;
  }
};

Case make_case(const std::string& op, int64_t bytes, Communicator& comm, const at::Device& d) {
  Case c;
  c.op = op;
  c.comm = &comm;
  const int64_t w = comm.world();
  int64_t count = std::max<int64_t>(bytes / 4, 1);
  if (op == "all_gather" || op == "reduce_scatter") count = std::max<int64_t>(count / w, 1) * w;
  if (op == "barrier") count = 0;
  c.count = count;
  auto opt = at::TensorOptions().dtype(at::kFloat).device(d);
  if (op == "all_gather") {
    c.in = at::empty({count / w}, opt);
    c.out = at::empty({count}, opt);
  } else if (op == "reduce_scatter") {
    c.in = at::empty({count}, opt);
    c.out = at::empty({count / w}, opt);
  } else {
    c.in = at::empty({std::max<int64_t>(count, 1)}, opt);
  }
  return c;
}

// Rank 0 decides (all ranks must run the same number of calls); a broadcast tells the others.
int agreed(Communicator& comm, int value, const at::Device& d) {
  auto t = at::full({1}, static_cast<double>(value), at::TensorOptions().dtype(at::kDouble).device(d));
  comm.broadcast(t, 0).wait();
  return static_cast<int>(t.item<double>());
}

}  // namespace

CommBenchArgs parse_comm_bench_args(const std::vector<std::string>& args) {
  CommBenchArgs a;
  auto value = [&](size_t& i) -> std::string {
    if (i + 1 >= args.size()) throw UsageError(fmt::format("bench-comm: {} needs a value", args[i]));
    return args[++i];
  };
  auto count = [&](const std::string& flag, const std::string& v, long long min) {
    auto n = str::parse_uint(v);
    if (!n || *n < min) throw UsageError(fmt::format("bench-comm: {} '{}' is not a whole number >= {}", flag, v, min));
    return *n;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& f = args[i];
    if (f == "--ops") {
      for (const auto& op : str::split(value(i), ',')) {
        if (std::find(kOps.begin(), kOps.end(), op) == kOps.end())
          throw UsageError(fmt::format("bench-comm: unknown collective '{}'", op),
                           "Use " + str::join(kOps, ", ") + ".");
        a.ops.push_back(op);
      }
    } else if (f == "--sizes") {
      for (const auto& s : str::split(value(i), ',')) a.sizes.push_back(count("--sizes", s, 1));
    } else if (f == "--iters") {
      a.iters = static_cast<int>(count(f, value(i), 1));
    } else if (f == "--warmup") {
      a.warmup = static_cast<int>(count(f, value(i), 0));
    } else if (f == "--max-seconds") {
      const std::string v = value(i);
      try {
        a.max_seconds = std::stod(v);
      } catch (const std::exception&) {
        throw UsageError(fmt::format("bench-comm: --max-seconds '{}' is not a number", v));
      }
    } else if (f == "--out") {
      a.out = value(i);
    } else {
      throw UsageError(fmt::format("bench-comm: unexpected argument '{}'", f),
                       "usage: mtrain-worker bench-comm --ops OPS --sizes BYTES,… [--iters N] [--warmup W] "
                       "[--max-seconds S] [--out FILE]");
    }
  }
  if (a.ops.empty()) a.ops = {"all_reduce"};
  if (a.sizes.empty()) a.sizes = {1 << 20};
  return a;
}

json run_comm_bench(const CommBenchArgs& a, const std::map<std::string, std::string>& env) {
  const int rank = env_int(env, "RANK", 0), world = env_int(env, "WORLD_SIZE", 1);
  const int local_rank = env_int(env, "LOCAL_RANK", 0);
  if (world < 1 || rank >= world)
    throw UsageError(fmt::format("RANK={} is outside WORLD_SIZE={}", rank, world), "RANK must be in [0, WORLD_SIZE)");
  CommOptions co;
  co.rank = rank;
  co.world = world;
  co.timeout = std::chrono::milliseconds(120000);
  at::Device device = at::kCPU;
  // As the trainer (loop/worker.cpp): NCCL only where this rank sees a GPU, so a CUDA build on a
  // machine without one measures Gloo on the CPU instead of failing in CUDA's initialisation.
  if (compat::nccl_available() && compat::cuda_device_count() > local_rank) {
    co.backend = BackendKind::Nccl;
    device = at::Device(at::kCUDA, static_cast<at::DeviceIndex>(local_rank));
    compat::select_cuda_device(local_rank);
  }
  auto addr_it = env.find("MASTER_ADDR");
  const std::string addr = addr_it == env.end() || addr_it->second.empty() ? "127.0.0.1" : addr_it->second;
  if (addr == "127.0.0.1" || addr == "localhost") co.hostname = "127.0.0.1";
  compat::StorePtr store =
      world > 1 ? compat::make_tcp_store(addr, env_int(env, "MASTER_PORT", 29500), rank == 0, world, co.timeout)
                : compat::make_hash_store();
  Communicator comm(store, co);

  json results = json::array();
  for (const auto& op : a.ops) {
    const std::vector<int64_t> sizes = op == "barrier" ? std::vector<int64_t>{0} : a.sizes;
    for (int64_t bytes : sizes) {
      Case c = make_case(op, bytes, comm, device);
      c.fill();
      c.run();
      device_sync(device);
      const double err = c.check();

      auto t0 = Clock::now();
      for (int i = 0; i < a.warmup; ++i) c.run();
      device_sync(device);
      const double warm_s = std::chrono::duration<double>(Clock::now() - t0).count();
      int iters = a.iters;
      if (a.max_seconds > 0 && a.warmup > 0 && warm_s / a.warmup * iters > a.max_seconds)
        iters = std::max(3, static_cast<int>(a.max_seconds / (warm_s / a.warmup)));
      iters = agreed(comm, iters, device);

      comm.barrier();
      t0 = Clock::now();
      for (int i = 0; i < iters; ++i) c.run();
      device_sync(device);
      const double mine = std::chrono::duration<double>(Clock::now() - t0).count() / iters;

      // Slowest rank's time and largest error, from every rank.
      auto mine_t = at::tensor({mine, err}, at::TensorOptions().dtype(at::kDouble)).to(device);
      auto all = at::empty({2 * world}, mine_t.options());
      comm.all_gather(mine_t, all).wait();
      auto v = all.cpu().view({world, 2});
      results.push_back({{"op", op},
                         {"bytes", op == "barrier" ? 0 : c.count * 4},
                         {"count", c.count},
                         {"iters", iters},
                         {"time_s", v.select(1, 0).max().item<double>()},
                         {"max_error", v.select(1, 1).max().item<double>()}});
    }
  }
  json doc = {{"world", world},
              {"backend", co.backend == BackendKind::Nccl ? "nccl" : "gloo"},
              {"device", device.str()},
              {"dtype", "float32"},
              {"results", results}};
  if (rank == 0 && !a.out.empty()) {
    if (const int err = replace_file_atomically(a.out, doc.dump(2) + "\n"); err != 0)
      throw RuntimeFailure(fmt::format("bench-comm: cannot write {}: {}", a.out, std::strerror(err)), "");
  }
  return doc;
}

}  // namespace mtrain::trainer

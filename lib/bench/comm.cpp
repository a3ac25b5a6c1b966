#include "lib/bench/comm.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "lib/bench/measures.hpp"
#include "lib/core/error.hpp"
#include "lib/core/strings.hpp"
#include "lib/launch/launch.hpp"

namespace fs = std::filesystem;

namespace mtrain::bench {

namespace {
const std::vector<std::string> kOps = {"all_reduce", "all_gather", "reduce_scatter", "broadcast"};
}

std::vector<std::string> comm_worker_args(const CommBenchOptions& o, const std::string& out_file) {
  for (const auto& op : o.ops)
    if (std::find(kOps.begin(), kOps.end(), op) == kOps.end())
      throw Error(fmt::format("--ops: unknown collective '{}'", op), "Use any of " + str::join(kOps, ",") + ".");
  std::vector<std::string> sizes;
  for (int64_t s : size_sweep(o.min_bytes, o.max_bytes)) sizes.push_back(std::to_string(s));
  std::vector<std::string> a = {"bench-comm", "--ops", str::join(o.ops, ","), "--sizes", str::join(sizes, ","),
                                "--iters", std::to_string(o.iters), "--warmup", std::to_string(o.warmup)};
  if (o.max_seconds > 0) {
    a.push_back("--max-seconds");
    a.push_back(fmt::format("{}", o.max_seconds));
  }
  if (!out_file.empty()) {
    a.push_back("--out");
    a.push_back(out_file);
  }
  return a;
}

BenchReport run_comm(const CommBenchOptions& o) {
  if (o.nproc < 1) throw Error(fmt::format("--nproc {} must be at least 1", o.nproc));
  if (o.worker_path.empty())
    throw Error("mtrain bench comm needs mtrain-worker (LibTorch) next to mtrain, and it is not installed",
                "Build mtrain with LibTorch (the default; -DMTRAIN_WITH_TORCH=ON).");
  const char* tmp = std::getenv("TMPDIR");
  fs::path dir = fs::path(tmp && *tmp ? tmp : "/tmp") / fmt::format("mtrain-bench-comm-{}", ::getpid());
  fs::create_directories(dir);
  const std::string out_file = (dir / "result.json").string();

  launch::LaunchOptions lo;
  lo.plan.nproc_per_node = config::RankCount::count(o.nproc);
  lo.plan.gpus = o.gpus;
  lo.plan.program = {o.worker_path};
  for (auto& a : comm_worker_args(o, out_file)) lo.plan.program.push_back(a);
  lo.master_port = config::MasterPort::automatic();
  lo.launcher = config::LauncherKind::Local;
  lo.grace_period_s = 5;
  const int rc = launch::run_launch(lo);
  json result;
  std::ifstream in(out_file);
  if (rc != 0 || !in) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    throw Error(fmt::format("the benchmark ranks failed (exit {}); their errors are above", rc),
                "Check `mtrain env`, or try fewer ranks or a smaller --max-bytes.", rc ? rc : kExitFailure);
  }
  result = json::parse(in);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return comm_report(result);
}

BenchReport comm_report(const json& w) {
  BenchReport r;
  const int world = w.at("world").get<int>();
  r.table.headers = {"collective", "size", "count", "type", "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                     "max error", "iters", "check"};
  r.table.left = {true};
  json rows = json::array();
  std::map<std::string, Series> series;
  int wrong = 0;
  double busbw_sum = 0;
  int busbw_n = 0;
  for (const auto& x : w.at("results")) {
    const std::string op = x.at("op");
    const double bytes = x.at("bytes").get<double>(), t = x.at("time_s").get<double>();
    const double err = x.at("max_error").get<double>();
    const double alg = algbw_gbps(bytes, t), bus = busbw_gbps(op, world, bytes, t);
    // Every input is a small integer pattern, so the exact answer is representable: any
    // difference is a wrong result, not round-off.
    const bool ok = err == 0;
    wrong += ok ? 0 : 1;
    busbw_sum += bus;
    ++busbw_n;
    const std::string redop = op == "all_reduce" || op == "reduce_scatter" ? "sum" : "none";
    const int root = op == "broadcast" ? 0 : -1;
    r.table.rows.push_back({op, format_size(x.at("bytes").get<int64_t>()), std::to_string(x.at("count").get<int64_t>()),
                            "float", redop, std::to_string(root), fmt::format("{:.1f}", t * 1e6), fmt::format("{:.3f}", alg),
                            fmt::format("{:.3f}", bus), fmt::format("{:g}", err), std::to_string(x.at("iters").get<int>()),
                            ok ? "ok" : "WRONG"});
    rows.push_back({{"op", op}, {"bytes", x.at("bytes")}, {"count", x.at("count")}, {"type", "float"}, {"redop", redop},
                    {"root", root}, {"time_s", t}, {"algbw_gbps", alg}, {"busbw_gbps", bus}, {"max_error", err},
                    {"iters", x.at("iters")}, {"correct", ok}});
    auto& s = series[op];
    s.name = op;
    s.points.emplace_back(bytes, bus);
  }
  const std::string backend = w.value("backend", "gloo"), device = w.value("device", "cpu");
  r.notes.push_back(fmt::format("# world {}, backend {}, device {}; busbw = algbw x 2(N-1)/N for all_reduce, x (N-1)/N for "
                                "all_gather and reduce_scatter (size = the full buffer), x 1 for broadcast",
                                world, backend, device));
  r.notes.push_back(fmt::format("# out of bounds values : {} {}", wrong, wrong ? "WRONG" : "OK"));
  r.notes.push_back(fmt::format("# avg bus bandwidth    : {:.3f} GB/s", busbw_n ? busbw_sum / busbw_n : 0.0));
  r.doc = {{"bench", "comm"}, {"world", world}, {"backend", backend}, {"device", device}, {"dtype", w.value("dtype", "float32")},
           {"rows", rows}, {"wrong", wrong}};
  r.plot.title = fmt::format("mtrain bench comm: bus bandwidth, {} ranks, {} on {}", world, backend, device);
  r.plot.xlabel = "size (bytes)";
  r.plot.ylabel = "busbw (GB/s)";
  r.plot.logx = true;
  for (auto& [op, s] : series) r.plot.series.push_back(s);
  return r;
}

}  // namespace mtrain::bench
